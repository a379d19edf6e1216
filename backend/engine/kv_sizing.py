"""How much a model's context and KV cache hold, from its checkpoint's config.

The context window follows the model (`max_position_embeddings`) unless PREFIXDESK_MAX_MODEL_LEN
caps it, and the KV cache needed for N warm bots plus live conversations is worked out at
start-up, so an operator sees before the first customer whether returning customers will
still find their conversation in the cache (docs/scaling.md)."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GiB = 1 << 30
FALLBACK_CONTEXT_WINDOW = 4096  # a checkpoint that does not say
_DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2}


def model_config(model_dir: Path) -> dict[str, Any]:
    try:
        config: dict[str, Any] = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return config


def context_window(model_dir: Path, configured: int | None) -> int:
    """The tokens a conversation may hold: as configured, else what the model was trained for."""
    if configured is not None:
        return configured
    return int(model_config(model_dir).get("max_position_embeddings") or FALLBACK_CONTEXT_WINDOW)


def knowledge_budget(window: int, conversation_room: int) -> int:
    """What a bot's help center may add to its fixed prefix: the context window less the room
    kept for a conversation (at most half the window, for small windows)."""
    return window - min(conversation_room, window // 2)


def kv_bytes_per_token(config: dict[str, Any], dtype: str) -> int:
    """Keys and values of every layer for one token."""
    heads = int(config.get("num_attention_heads", 1))
    head_dim = int(config.get("head_dim") or int(config.get("hidden_size", 0)) // max(1, heads))
    kv_heads = int(config.get("num_key_value_heads", heads))
    layers = int(config.get("num_hidden_layers", 0))
    if dtype == "auto":
        dtype = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16")
        if _DTYPE_BYTES.get(dtype) == 4:
            # vLLM runs a float32 checkpoint in its platform's 16-bit type under "auto"
            # ("Downcasting torch.float32 to torch.bfloat16"), and its KV cache with it.
            dtype = "bfloat16"
    return 2 * layers * kv_heads * head_dim * _DTYPE_BYTES.get(dtype, 2)


@dataclass(frozen=True)
class KvSizing:
    bytes_per_token: int
    cache_tokens: int  # what the KV cache holds, in whole blocks
    fixed_tokens: int  # the bots' warm fixed prefixes (their own and their judges')
    conversation_tokens: int  # what one live conversation adds beyond its bot's prefix

    @property
    def conversations(self) -> int:
        """Live conversations that fit beside the warm prefixes before the oldest are evicted."""
        return max(0, (self.cache_tokens - self.fixed_tokens) // max(1, self.conversation_tokens))

    def needed_gib(self, conversations: int) -> float:
        """The KV cache that holds the warm prefixes and `conversations` live ones."""
        tokens = self.fixed_tokens + conversations * self.conversation_tokens
        return tokens * self.bytes_per_token / GiB

    def describe(self, bots: int) -> str:
        return (
            f"KV cache: {self.cache_tokens:,} tokens at {self.bytes_per_token / 1024:.1f} KiB each; "
            f"{bots} bots' warm prefixes take {self.fixed_tokens:,}; room for about "
            f"{self.conversations:,} live conversations of {self.conversation_tokens:,} tokens beyond them "
            f"(1,000 such conversations need {self.needed_gib(1000):.1f} GiB)"
        )


def kv_sizing(
    model_dir: Path,
    *,
    kv_cache_gib: float,
    block_size: int,
    dtype: str,
    fixed_tokens: int,
    conversation_tokens: int,
) -> KvSizing:
    per_token = kv_bytes_per_token(model_config(model_dir), dtype)
    tokens = int(kv_cache_gib * GiB) // max(1, per_token)
    return KvSizing(per_token, tokens // block_size * block_size, fixed_tokens, conversation_tokens)
