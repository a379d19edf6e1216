"""The bots this process serves: each one's current prompt version, its fixed prefix warmed.

Read from prompts/ at start and on reload; each bot's requests carry its own cache salt,
so bots (tenants) never share cached blocks. A changed prefix is warmed before it takes
traffic, and conversations keep the version they started with.
"""

import hashlib
import hmac
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backend.engine.interface import Engine, warm
from backend.prompting import repository as repo
from backend.prompting.assembler import BotPrefix, PromptAssembler
from backend.prompting.bots import Bot, load_bots
from backend.prompting.judge_prompts import IN_CONTEXT
from backend.prompting.yes_no import YesNoJudge
from backend.unit_of_work import UnitOfWork


@dataclass(frozen=True)
class LiveBot:
    definition: Bot
    prefix: BotPrefix
    bot_id: int
    prompt_version_id: int
    cache_salt: str  # every request of this bot carries it: no cache sharing across bots
    judges: dict[str, YesNoJudge]  # yes/no questions about its conversations, by name

    def fixed_prompts(self) -> list[tuple[str, tuple[int, ...]]]:
        """Every fixed prefix of this bot's requests, named: its own, then its judges'."""
        return [("prefix", self.prefix.token_ids)] + [
            (f"judge-{name}", judge.prefix_ids)
            for name, judge in sorted(self.judges.items())
            if name not in IN_CONTEXT  # asked inside a conversation, whose prefix is this bot's
        ]


def cache_salt(secret_key: str, slug: str) -> str:
    return hmac.new(secret_key.encode(), f"cache-salt:{slug}".encode(), hashlib.sha256).hexdigest()[:32]


class BotRegistry(Mapping[str, LiveBot]):
    """Read-only to the rest of the app; `start` and `reload` replace the whole set at once."""

    def __init__(self, *, prompts_dir: Path, secret_key: str, assembler: PromptAssembler):
        self.prompts_dir = prompts_dir
        self.secret_key = secret_key
        self.assembler = assembler
        self._bots: dict[str, LiveBot] = {}
        # Every version this process has loaded, old ones too: their conversations go on.
        self._prefix_by_version: dict[int, tuple[int, ...]] = {}

    def __getitem__(self, slug: str) -> LiveBot:
        return self._bots[slug]

    def __iter__(self) -> Iterator[str]:
        return iter(self._bots)

    def __len__(self) -> int:
        return len(self._bots)

    def prefix_of_version(self, version_id: int) -> tuple[int, ...] | None:
        return self._prefix_by_version.get(version_id)

    async def start(self, uow: UnitOfWork) -> None:
        """Load every bot; they serve once `uow` commits their versions."""
        fresh = await self._load(uow)

        async def switch() -> None:
            self._switch(fresh)

        uow.after_commit(switch)

    async def warm(self, engine: Engine) -> None:
        """Run fixed prefixes once so the first customer of each bot already hits the cache."""
        for slug in sorted(self._bots):
            await _warm_bot(engine, self._bots[slug], "warmup")

    async def reload(self, uow: UnitOfWork, engine: Engine | None) -> dict[str, dict[str, Any]]:
        """Read prompts/ again; once `uow` commits, warm every changed prefix, then switch.

        Raises BotDefinitionError, leaving the running bots as they were, if a bot does not load.
        """
        fresh = await self._load(uow)
        changed = {
            slug
            for slug, live in fresh.items()
            if slug not in self._bots or self._bots[slug].fixed_prompts() != live.fixed_prompts()
        }

        async def warm_then_switch() -> None:
            if engine is not None:
                for slug in sorted(changed):
                    await _warm_bot(engine, fresh[slug], "reload")
            self._switch(fresh)

        uow.after_commit(warm_then_switch)
        return {
            slug: {
                "prompt_version_id": live.prompt_version_id,
                "digest": live.prefix.digest,
                "prefix_tokens": len(live.prefix.token_ids),
                "changed": slug in changed,
            }
            for slug, live in sorted(fresh.items())
        }

    async def _load(self, uow: UnitOfWork) -> dict[str, LiveBot]:
        """Every bot in prompts/, with the version of its fixed prefix recorded in the database."""
        fresh: dict[str, LiveBot] = {}
        for slug, definition in load_bots(self.prompts_dir).items():
            prefix = self.assembler.bot_prefix(definition)
            bot_row, version = await repo.upsert_bot_version(uow.db, definition, prefix)
            salt = cache_salt(self.secret_key, slug)
            judges = {
                name: YesNoJudge(prompt, self.assembler.format) for name, prompt in definition.judges.items()
            }
            fresh[slug] = LiveBot(definition, prefix, bot_row.id, version.id, salt, judges)
        return fresh

    def _switch(self, fresh: dict[str, LiveBot]) -> None:
        for live in fresh.values():
            self._prefix_by_version[live.prompt_version_id] = live.prefix.token_ids
        self._bots = fresh


async def _warm_bot(engine: Engine, live: LiveBot, label: str) -> None:
    for name, token_ids in live.fixed_prompts():
        await warm(engine, token_ids, f"{label}-{live.definition.slug}-{name}", cache_salt=live.cache_salt)
