"""The bots this process serves: each one's current prompt version, its fixed prefix warmed.

Read from prompts/ at start and on reload; each bot's requests carry its own cache salt,
so bots (tenants) never share cached blocks. A changed prefix is warmed before it takes
traffic, and conversations keep the version they started with.
"""

import asyncio
import hashlib
import hmac
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from backend.bots import repository as repo
from backend.engine.interface import Engine, warm
from backend.judges.yes_no import YesNoJudge
from backend.knowledge.articles import Knowledge
from backend.knowledge.search import ArticleSearch
from backend.prompting.assembler import BotPrefix, PromptAssembler
from backend.prompting.definitions import Bot, load_bots
from backend.prompting.judge_prompts import IN_CONTEXT
from backend.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)

Warmth = Literal["cold", "warming", "warm"]  # a bot's fixed prefix: not cached, being computed, cached


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


@dataclass(frozen=True)
class VersionKnowledge:
    """The help center of one prompt version, which its conversations keep."""

    knowledge: Knowledge
    in_prefix: bool  # False: articles are brought beside the questions they match
    search: ArticleSearch | None  # over its articles (None: it has none)
    language: str

    @property
    def beside_questions(self) -> ArticleSearch | None:
        """The search that brings articles beside each question, when they are not in the prefix."""
        return None if self.in_prefix else self.search

    @classmethod
    def of(cls, knowledge: Knowledge, in_prefix: bool, language: str) -> "VersionKnowledge":
        return cls(knowledge, in_prefix, ArticleSearch(knowledge, language) if knowledge else None, language)


NO_KNOWLEDGE = VersionKnowledge(Knowledge(), True, None, "en")


def cache_salt(secret_key: str, slug: str) -> str:
    return hmac.new(secret_key.encode(), f"cache-salt:{slug}".encode(), hashlib.sha256).hexdigest()[:32]


class BotRegistry(Mapping[str, LiveBot]):
    """Read-only to the rest of the app; `start` and `reload` replace the whole set at once."""

    def __init__(
        self,
        *,
        prompts_dir: Path,
        secret_key: str,
        assembler: PromptAssembler,
        knowledge_budget: int | None = None,
    ):
        self.prompts_dir = prompts_dir
        self.secret_key = secret_key
        self.assembler = assembler
        self.knowledge_budget = knowledge_budget  # tokens a help center may add to a fixed prefix
        self._bots: dict[str, LiveBot] = {}
        # Every version this process has loaded, old ones too: their conversations go on.
        self._prefix_by_version: dict[int, tuple[int, ...]] = {}
        self._knowledge_by_version: dict[int, VersionKnowledge] = {}
        self.warmth: dict[str, Warmth] = {}  # per bot

    def __getitem__(self, slug: str) -> LiveBot:
        return self._bots[slug]

    def __iter__(self) -> Iterator[str]:
        return iter(self._bots)

    def __len__(self) -> int:
        return len(self._bots)

    def slug_of_salt(self, salt: str | None) -> str | None:
        """The bot whose requests carry this cache salt (a remote engine names it to the router)."""
        return next((slug for slug, live in self._bots.items() if live.cache_salt == salt), None)

    def prefix_of_version(self, version_id: int) -> tuple[int, ...] | None:
        return self._prefix_by_version.get(version_id)

    async def knowledge_of_version(self, db: AsyncSession, version_id: int) -> VersionKnowledge:
        """The help center a conversation of this version answers from (loaded once per process)."""
        known = self._knowledge_by_version.get(version_id)
        if known is None:
            version = await repo.get_prompt_version(db, version_id)
            if version is None:
                raise LookupError(f"prompt version {version_id} is missing")
            bot = await repo.get_bot(db, version.bot_id)
            knowledge = Knowledge.of_records(version.knowledge)
            language = bot.language if bot is not None else "en"
            known = VersionKnowledge.of(knowledge, version.knowledge_in_prefix, language)
            self._knowledge_by_version[version_id] = known
        return known

    @property
    def warming(self) -> list[str]:
        """The bots whose fixed prefixes are being computed (not yet served from the cache)."""
        return sorted(slug for slug in self._bots if self.warmth.get(slug) == "warming")

    async def start(self, uow: UnitOfWork) -> None:
        """Load every bot; they serve once `uow` commits their versions."""
        fresh = await self._load(uow)

        async def switch() -> None:
            self._switch(fresh)

        uow.after_commit(switch)

    async def warm(self, engine: Engine) -> None:
        """Run fixed prefixes once so the first customer of each bot already hits the cache.

        All bots at once: the engine batches them, so a long help center being prefilled does not
        hold back the short bots, which are warm after their own few steps."""

        async def warm_one(live: LiveBot) -> None:
            slug = live.definition.slug
            try:
                tokens, cached = await _warm_bot(engine, live, "warmup")
            except BaseException:
                self.warmth[slug] = "cold"
                raise
            self.warmth[slug] = "warm"
            # Found cached at start: read from the KV tier (PREFIXDESK_KV_TIER), not computed.
            logger.info(
                "bot %s warm (%d prefix tokens; %d of its fixed prompts' %d tokens found cached)",
                slug,
                len(live.prefix.token_ids),
                cached,
                tokens,
            )

        for slug in self._bots:  # before the first await: no moment where all look ready
            self.warmth[slug] = "warming"
        await asyncio.gather(*(warm_one(self._bots[slug]) for slug in sorted(self._bots)))

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
                await asyncio.gather(*(_warm_bot(engine, fresh[slug], "reload") for slug in sorted(changed)))
            self._switch(fresh)
            for slug in changed:
                self.warmth[slug] = "warm" if engine is not None else "cold"

        uow.after_commit(warm_then_switch)
        return {
            slug: {
                "prompt_version_id": live.prompt_version_id,
                "digest": live.prefix.digest,
                "prefix_tokens": len(live.prefix.token_ids),
                "knowledge_articles": len(live.definition.knowledge),
                "knowledge_in_prefix": live.prefix.knowledge_in_prefix,
                "changed": slug in changed,
            }
            for slug, live in sorted(fresh.items())
        }

    async def _load(self, uow: UnitOfWork) -> dict[str, LiveBot]:
        """Every bot in prompts/, with the version of its fixed prefix recorded in the database."""
        fresh: dict[str, LiveBot] = {}
        for slug, definition in load_bots(self.prompts_dir).items():
            prefix = self.assembler.bot_prefix(definition, self.knowledge_budget)
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
            self._knowledge_by_version.setdefault(
                live.prompt_version_id,
                VersionKnowledge.of(
                    live.definition.knowledge, live.prefix.knowledge_in_prefix, live.definition.language
                ),
            )
        for slug in fresh:
            self.warmth.setdefault(slug, "cold")
        self._bots = fresh


async def _warm_bot(engine: Engine, live: LiveBot, label: str) -> tuple[int, int]:
    """Every fixed prompt of the bot run once: their tokens, and how many were found cached.
    Its lines are encoded for ranking by meaning meanwhile, on the app's core."""
    live.definition.reference.prepare()
    tokens = cached = 0
    for name, token_ids in live.fixed_prompts():
        label_of_prompt = f"{label}-{live.definition.slug}-{name}"
        cached += await warm(engine, token_ids, label_of_prompt, cache_salt=live.cache_salt)
        tokens += len(token_ids)
    return tokens, cached
