"""The bots this process serves: each one's current prompt version, its fixed prefix warmed."""

import hashlib
import hmac
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.conversations import repository as repo
from backend.conversations.context import ConversationContext
from backend.engine.vllm_engine import Engine, warm
from backend.prompting.assembler import BotPrefix, PromptAssembler
from backend.prompting.bots import Bot, load_bots


@dataclass(frozen=True)
class LiveBot:
    definition: Bot
    prefix: BotPrefix
    bot_id: int
    prompt_version_id: int
    cache_salt: str  # every request of this bot carries it: no cache sharing across bots


def cache_salt(secret_key: str, slug: str) -> str:
    return hmac.new(secret_key.encode(), f"cache-salt:{slug}".encode(), hashlib.sha256).hexdigest()[:32]


class LiveBots(Mapping[str, LiveBot]):
    """Read-only to the rest of the app; `start` and `reload` replace the whole set at once."""

    def __init__(
        self,
        *,
        prompts_dir: Path,
        secret_key: str,
        sessions: async_sessionmaker[AsyncSession],
        assembler: PromptAssembler,
        context: ConversationContext,
    ):
        self.prompts_dir = prompts_dir
        self.secret_key = secret_key
        self.sessions = sessions
        self.assembler = assembler
        self.context = context
        self._bots: dict[str, LiveBot] = {}

    def __getitem__(self, slug: str) -> LiveBot:
        return self._bots[slug]

    def __iter__(self) -> Iterator[str]:
        return iter(self._bots)

    def __len__(self) -> int:
        return len(self._bots)

    async def start(self) -> None:
        self._bots = await self._load()

    async def warm(self, engine: Engine, slugs: set[str] | None = None) -> None:
        """Run fixed prefixes once so the first customer of each bot already hits the cache."""
        for slug in sorted(self._bots if slugs is None else slugs):
            live = self._bots[slug]
            await warm(engine, live.prefix.token_ids, f"warmup-{slug}", cache_salt=live.cache_salt)

    async def reload(self, engine: Engine | None) -> dict[str, dict[str, Any]]:
        """Read prompts/ again; warm every changed prefix before it takes traffic, then switch.

        Conversations keep the prompt version they started with; new ones get the new version.
        Raises BotDefinitionError, leaving the running bots as they were, if a bot does not load.
        """
        fresh = await self._load()
        changed = {
            slug
            for slug, live in fresh.items()
            if slug not in self._bots or self._bots[slug].prefix != live.prefix
        }
        if engine is not None:
            for slug in sorted(changed):
                live = fresh[slug]
                await warm(engine, live.prefix.token_ids, f"reload-{slug}", cache_salt=live.cache_salt)
        self._bots = fresh
        return {
            slug: {
                "prompt_version_id": live.prompt_version_id,
                "digest": live.prefix.digest,
                "prefix_tokens": len(live.prefix.token_ids),
                "changed": slug in changed,
            }
            for slug, live in sorted(fresh.items())
        }

    async def _load(self) -> dict[str, LiveBot]:
        """Every bot in prompts/, with the version of its fixed prefix recorded in the database."""
        definitions = load_bots(self.prompts_dir)
        fresh: dict[str, LiveBot] = {}
        async with self.sessions() as db:
            for slug, definition in definitions.items():
                prefix = self.assembler.bot_prefix(definition)
                bot_row, version = await repo.upsert_bot_version(db, definition, prefix)
                salt = cache_salt(self.secret_key, slug)
                fresh[slug] = LiveBot(definition, prefix, bot_row.id, version.id, salt)
            await db.commit()
        for live in fresh.values():
            self.context.know_prefix(live.prompt_version_id, live.prefix.token_ids)
        return fresh
