"""All settings, read once from the environment (and `.env`)."""

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEVELOPMENT_SECRET_KEY = "development-only-secret"  # noqa: S105 (refused in production)
WIDGET_ORIGINS_SETTING = "PREFIXDESK_WIDGET_ORIGINS"
_ORIGIN = re.compile(
    r"(?P<scheme>https?)://(?P<host>\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(?P<port>[0-9]{1,5}))?/?", re.IGNORECASE
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_origin(value: str) -> str:
    """An origin as browsers send it (`scheme://host[:port]`, lower case, no default port), or a
    ValueError that says how to write one. Embedding pages are matched on it exactly."""
    match = _ORIGIN.fullmatch(value.strip())
    port = int(match["port"]) if match and match["port"] else None
    if not match or (port is not None and not 0 < port < 65536):
        raise ValueError(
            f"{value[:100]!r} is not an origin: write scheme://host:port, e.g. https://shop.example.com:8443 "
            "(no path; the port may be left out when it is the scheme's default)"
        )
    scheme, host = match["scheme"].lower(), match["host"].lower()
    return f"{scheme}://{host}" if port in (None, _DEFAULT_PORTS[scheme]) else f"{scheme}://{host}:{port}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PREFIXDESK_", env_file=".env", extra="ignore")

    # Storage. Postgres in production; a SQLite file by default so `serve` runs anywhere.
    database_url: str = Field(
        default="sqlite+aiosqlite:///var/prefixdesk.db",
        validation_alias=AliasChoices("DATABASE_URL", "PREFIXDESK_DATABASE_URL"),
    )
    # Hot session store. Unset: an in-process store (one app process only).
    redis_url: str | None = Field(
        default=None, validation_alias=AliasChoices("REDIS_URL", "PREFIXDESK_REDIS_URL")
    )
    redis_key_prefix: str = "prefixdesk:"
    session_ttl_seconds: int = 24 * 3600

    # The model: a local Hugging Face checkpoint directory, or a packaged model's name
    # (engine/model_store.py); unset, the default model (fetched and converted by `prefixdesk
    # model fetch` into `cache_dir`).
    model: Path | None = None
    cache_dir: Path = Path.home() / ".cache" / "prefixdesk"
    prompts_dir: Path = PROJECT_ROOT / "prompts"

    # Engine (vLLM).
    enable_prefix_caching: bool = True
    block_size: int = 32  # vLLM's CPU attention needs a multiple of 32
    kv_cache_gib: float = 4.0
    # A second tier for prefix KV (vLLM's offloading connector, engine/kv_tier.py): blocks go to disk
    # too, so a restarted engine finds the bots' fixed prefixes there. "off": the engine's memory only.
    kv_tier: Literal["off", "disk"] = "off"
    kv_tier_path: Path | None = None  # unset: cache_dir / "kv-tier" (a subdirectory per model and vLLM)
    # Host memory (GiB, in /dev/shm) for the tier's CPU staging area, the blocks' way to and from disk.
    kv_tier_gib: float = Field(default=1.0, ge=1 / 64, le=1024)
    # The context window; unset, the model's own (`max_position_embeddings`: 32,768 for Qwen2.5).
    max_model_len: int | None = None
    # Of the context window, what a conversation keeps beyond its bot's fixed prefix: a help center
    # that would leave less is not put in the prefix; its articles come beside the questions.
    conversation_room_tokens: int = Field(default=4096, ge=256)
    # What a live conversation is taken to add to the KV cache, for the sizing logged at start-up.
    sizing_conversation_tokens: int = Field(default=2048, ge=1)
    max_num_batched_tokens: int = 4096
    # A prompt's uncomputed part beyond this many tokens is prefilled this many per engine step
    # while other requests wait (vLLM's long_prefill_token_threshold), so a long help center
    # being warmed or a long first turn does not hold back every other bot's replies. 0: no cap.
    long_prefill_tokens: int = Field(default=1024, ge=0)
    max_num_seqs: int = 32
    # An idle engine, woken by a request, waits until none has arrived for this long before its
    # step, so that a turn's reply and judges start together (backend/engine/step_gathering.py). 0: off.
    engine_gather_ms: float = Field(default=3.0, ge=0)
    gpu_memory_utilization: float = 0.5  # on the CPU build: share of host memory
    tensor_parallel_size: int = 1
    dtype: str = "auto"
    enforce_eager: bool = True  # compilation costs minutes at start-up on the CPU
    seed: int = 0
    # Speculative decoding by prompt lookup ("ngram"): what followed the reply's last tokens in
    # the prompt is proposed as a draft, verified in one step; greedy replies stay the same, and
    # samples keep their distribution (vLLM's CPU build needs `engine/sampled_drafts.py` for them).
    speculative_method: Literal["off", "ngram"] = "ngram"
    speculative_tokens: int = Field(default=5, ge=1)  # draft tokens proposed per step
    speculative_lookup_min: int = Field(default=2, ge=1)  # n-gram sizes looked up in the prompt
    speculative_lookup_max: int = Field(default=5, ge=1)
    # No drafts in an engine step of more than this many requests (vLLM's batch-size schedule):
    # a busy batch has no spare compute to check them, and they delay the others' first tokens.
    # 0: draft at every batch size.
    speculative_max_batch: int = Field(default=8, ge=0)

    # "embedded" (vLLM in this process) or "remote": one OpenAI-compatible URL, vLLM's router in
    # front of `vllm serve` replicas (same model and block size, prefix caching on) or one replica.
    engine: Literal["embedded", "remote"] = "embedded"
    engine_url: str | None = None
    # The header every request of a conversation carries its id in, which the router keeps the
    # conversation on one replica by (vllm-router's consistent_hash reads X-Session-Id).
    session_header: str = Field(default="X-Session-Id", pattern=r"^[A-Za-z0-9-]+$")
    health_check_interval_s: float = 2.0
    # What answers 200 while requests can be served: a replica's /health; vllm-router's /readiness
    # (its /health fails while any replica is down).
    engine_health_path: str = Field(default="/health", pattern=r"^/[A-Za-z0-9_/.-]*$")
    engine_request_timeout_s: float = 300.0
    engine_start_timeout_s: float = 600.0  # replicas load their model meanwhile

    # Keys each bot's prefix-cache salt: bots (tenants) never share cached blocks, so none can
    # learn another's prompts from cache timing. Set it to a long random string in production.
    secret_key: str = DEVELOPMENT_SECRET_KEY

    # Replies.
    max_reply_tokens: int = 256
    temperature: float = 0.0
    warmup_on_start: bool = True
    # Ask the model (prompts/_judges) whether a customer asks for a person, whether a reply
    # answered and whether the policy supports it, and sample replies to compare with. Off: the
    # bot never hands over on its own, and only the deterministic checks flag replies.
    model_judges: bool = True
    # Hold a reply that opens with a plain yes or no until the bot's opening judge agrees; if it
    # does not, write it again with the matching policy lines (or hand over, as the bot says).
    second_try: bool = True
    # The turn's engine requests one at a time (the judges before the reply, not beside it): the
    # CPU build rounds floats differently when requests share a step, so only then is a reply the
    # same every time (the eval's app). It costs the first token the judges' whole time.
    one_request_at_a_time: bool = False
    # How every bot's replies are checked before they are shown (prompting/answers.py): "bot"
    # as each bot's `[answers] checks` says, or "strict", "balanced" or "off" for all of them.
    answer_checks: Literal["bot", "strict", "balanced", "off"] = "bot"
    # How many replies are sampled beside each held reply to check it agrees with them
    # (`[answers] samples`): unset, as each bot says; 0 turns the check off for every bot.
    answer_samples: int | None = Field(default=None, ge=0, le=8)
    # Replies being written in this process above which the optional checks are shed, the
    # cheapest to lose first (turns/shedding.py): the samples above one; the policy, source
    # and quoted-line judges above this; the unanswered judge above twice this; the handoff
    # judge above four times this. Size it to what the engine computes at once.
    shed_checks_above: int = Field(default=4, ge=1)
    # How many lines of a bot's policy that match the customer's message are repeated beside
    # it in the model's view of the turn (docs/quality.md); 0 shows the message alone.
    relevant_lines: int = Field(default=1, ge=0, le=20)
    # A conversation's turn lock; extended while a reply is written, so the lock of a process
    # that died frees itself after this long.
    turn_lock_ttl_s: int = 60

    # Customer identity verification: the shop's server signs what the widget says of the
    # customer (user id, e-mail, name) with HMAC-SHA256 under this secret. Unset: identities
    # are accepted only unsigned, as unverified. Never sent to a browser.
    identity_secret: SecretStr | None = None

    # Origins (scheme://host:port, e.g. https://shop.example.com:8443) allowed to embed the widget
    # from another origin; admins add more at run time (embedding/, the `widget_origins` table).
    widget_origins: list[str] = []
    widget_origins_cache_s: float = 5.0  # how long processes reuse the list admins keep

    # The proxies (load balancers) whose X-Forwarded-For and X-Forwarded-Proto name the client:
    # addresses or networks ("10.0.0.0/8"), "*" for any. The per-address rate limit, the loopback
    # rule of /metrics and the logs see the client a trusted proxy names; a request from any
    # other host is taken to come from that host, whatever its headers say.
    trusted_proxies: list[str] = ["127.0.0.1"]

    # Abuse limits (429 with Retry-After beyond them).
    rate_limit_messages_per_conversation: int = 20  # per minute
    rate_limit_requests_per_address: int = 120  # widget requests per minute per client address
    max_pending_replies: int = 64  # replies queued or generating in one process

    # Widget limits.
    max_message_chars: int = 4000
    max_request_bytes: int = 64 * 1024

    # Outgoing webhooks: retries back off exponentially from this base.
    webhook_max_attempts: int = 8
    webhook_backoff_base_s: float = 2.0
    webhook_poll_interval_s: float = 1.0
    # The address people reach this server at (scheme://host[:port]), for links that leave it:
    # a rating webhook's link to the conversation in the console. Unset: such links are paths.
    public_url: str | None = None

    # Transcript exports (admin): the longest date range one export may cover.
    export_max_days: int = Field(default=31, ge=1)

    # "production" refuses development defaults for secrets.
    environment: Literal["development", "production"] = "development"

    # Prometheus scrapers send this as a bearer token; unset, /metrics answers loopback only.
    metrics_token: str | None = None

    # HTTP server.
    host: str = "127.0.0.1"
    port: int = 8000

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, url: str) -> str:
        """Accept plain `postgresql://` and `sqlite://` URLs; the app needs async drivers."""
        for plain, driver in (
            ("postgresql://", "postgresql+asyncpg://"),
            ("postgres://", "postgresql+asyncpg://"),
            ("sqlite://", "sqlite+aiosqlite://"),
        ):
            if url.startswith(plain):
                return driver + url[len(plain) :]
        return url

    @field_validator("engine_url")
    @classmethod
    def _engine_url(cls, url: str | None) -> str | None:
        if url is not None and not re.fullmatch(r"https?://[^/\s?#]+(/\S*)?", url.strip()):
            raise ValueError(f"PREFIXDESK_ENGINE_URL: write it as http://host:port, not {url!r}")
        return url.strip().rstrip("/") if url else None

    @field_validator("widget_origins")
    @classmethod
    def _widget_origins(cls, origins: list[str]) -> list[str]:
        try:
            return list(dict.fromkeys(normalize_origin(origin) for origin in origins))
        except ValueError as error:
            raise ValueError(f"{WIDGET_ORIGINS_SETTING}: {error}") from None

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, url: str | None) -> str | None:
        try:
            return normalize_origin(url) if url else None
        except ValueError as error:
            raise ValueError(f"PREFIXDESK_PUBLIC_URL: {error}") from None

    @field_validator("block_size")
    @classmethod
    def _block_size(cls, value: int) -> int:
        if value <= 0 or value % 16:
            raise ValueError("block_size must be a positive multiple of 16 (32 on the CPU)")
        return value

    @model_validator(mode="after")
    def _kv_tier(self) -> "Settings":
        if self.kv_tier != "off" and not self.enable_prefix_caching:
            raise ValueError("PREFIXDESK_KV_TIER=disk needs PREFIXDESK_ENABLE_PREFIX_CACHING=true")
        if self.kv_tier_path is not None and self.kv_tier_path.is_file():
            raise ValueError(f"PREFIXDESK_KV_TIER_PATH {self.kv_tier_path} is a file, not a directory")
        return self

    @model_validator(mode="after")
    def _remote_needs_a_url(self) -> "Settings":
        if os.environ.get("PREFIXDESK_ENGINE_URLS"):
            raise ValueError(
                "PREFIXDESK_ENGINE_URLS is no longer read: put vLLM's router in front of the replicas "
                "and set PREFIXDESK_ENGINE_URL to it (docs/scaling.md)"
            )
        if self.engine == "remote" and not self.engine_url:
            raise ValueError(
                "PREFIXDESK_ENGINE=remote needs PREFIXDESK_ENGINE_URL (a vLLM router or replica)"
            )
        return self

    @model_validator(mode="after")
    def _lookup_window(self) -> "Settings":
        if self.speculative_lookup_min > self.speculative_lookup_max:
            raise ValueError("speculative_lookup_min must not exceed speculative_lookup_max")
        return self

    @model_validator(mode="after")
    def _no_development_secrets_in_production(self) -> "Settings":
        if self.environment == "production" and self.secret_key == DEVELOPMENT_SECRET_KEY:
            raise ValueError("PREFIXDESK_SECRET_KEY must be set to a long random string in production")
        return self


@lru_cache
def get_settings() -> Settings:
    return Settings()


def settings_given(obj: object) -> Settings:
    """The settings the composition root read: `backend/cli.py` puts them in the command's
    context (`ctx.obj`), and every sub-command takes them from there instead of the environment."""
    if not isinstance(obj, Settings):
        raise RuntimeError("no settings in the command's context: run it through the `prefixdesk` command")
    return obj
