"""The app's long-lived parts, built from settings and wired together; started and closed as one.

This is the one place that knows every part: routes ask for the parts they use by type
(`api.deps.provided`), and every part is handed only the collaborators it uses.
"""

import asyncio
import logging
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from backend.admin.erasure import Erasures
from backend.admin.reloads import PromptReloads
from backend.api.deps import Provided
from backend.api.rate_limits import RateLimits
from backend.bots.registry import BotRegistry
from backend.config import Settings
from backend.conversations.customers import CustomerConversations
from backend.conversations.team import TeamDesk
from backend.db import create_db_engine, create_session_factory
from backend.embedding.origins import AllowedOrigins
from backend.engine.factory import EngineHeadStart, start_engine, with_context_window
from backend.engine.interface import Engine
from backend.engine.kv_sizing import knowledge_budget, kv_sizing
from backend.engine.live import LiveEngine
from backend.engine.metered import MeteredEngine
from backend.engine.model_store import resolve_model_dir
from backend.engine.model_tokenizer import load_tokenizer
from backend.engine.supervisor import EngineSupervisor
from backend.engine.vllm_options import engine_dtype, kv_cache_gib
from backend.events.bus import PROMPTS_RELOADED, STATUS_CHANGED, EventBus
from backend.events.listener import EventListener
from backend.inbox.service import InboxService
from backend.metrics.recorder import Metrics
from backend.prompting.assembler import PromptAssembler
from backend.prompting.chat_format import ChatFormat
from backend.redis_client import create_redis
from backend.stores import build_stores
from backend.turns.checks import (
    answered_the_question,
    figures_in_matching_lines,
    figures_in_sources,
    grounded_in_matching_lines,
    supported_by_policy,
)
from backend.turns.claims import ReplySlots, ReplyStops, TurnClaims
from backend.turns.context import ConversationContext
from backend.turns.decisions import asks_for_person, wait_for_agent
from backend.turns.finish import ReplyFinisher
from backend.turns.parts import ConversationParts, TurnLimits
from backend.turns.reply import Replies
from backend.turns.reply_policy import ReplyPolicy
from backend.turns.shedding import CheckShedding
from backend.turns.sources import SourcePicker
from backend.turns.turn import ChatTurns
from backend.turns.turn_lock import TurnLocks
from backend.unit_of_work import UnitOfWork, unit_of_work
from backend.webhooks.worker import WebhookWorker

logger = logging.getLogger(__name__)

BACKGROUND_STOP_S = 10.0  # how long closing waits for the background tasks to stop


@dataclass
class Services:
    settings: Settings
    db_engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    redis: Redis | None  # one client per process, shared by every store below
    bus: EventBus
    listener: EventListener
    metrics: Metrics
    limits: RateLimits
    assembler: PromptAssembler
    bots: BotRegistry
    engine: LiveEngine
    supervisor: EngineSupervisor
    context: ConversationContext
    claims: TurnClaims
    turns: ChatTurns
    customers: CustomerConversations
    team: TeamDesk
    inbox: InboxService
    erasures: Erasures
    reloads: PromptReloads
    webhooks: WebhookWorker
    origins: AllowedOrigins
    background: list[asyncio.Task[None]] = field(default_factory=list)

    def new_work(self) -> AbstractAsyncContextManager[UnitOfWork]:
        return unit_of_work(self.sessions, self.bus)

    def provided(self) -> Provided:
        """What routes may ask for, by type."""
        registry = Provided()
        for kind, instance in (
            (Settings, self.settings),
            (async_sessionmaker, self.sessions),
            (EventBus, self.bus),
            (Metrics, self.metrics),
            (RateLimits, self.limits),
            (BotRegistry, self.bots),
            (LiveEngine, self.engine),
            (EngineSupervisor, self.supervisor),
            (ChatTurns, self.turns),
            (CustomerConversations, self.customers),
            (TeamDesk, self.team),
            (InboxService, self.inbox),
            (Erasures, self.erasures),
            (PromptReloads, self.reloads),
            (AllowedOrigins, self.origins),
        ):
            registry.add(kind, instance)
        return registry

    async def start(self) -> None:
        """Record the bots' versions, then load and warm the engine in the background:
        `/healthz` answers meanwhile and `/readyz` says when turns are taken."""
        async with self.new_work() as work:
            await self.bots.start(work)
        self.background = [
            asyncio.create_task(self.supervisor.run()),
            asyncio.create_task(self.webhooks.run()),
            asyncio.create_task(self.listener.run()),
            asyncio.create_task(self.metrics.sample_engine(lambda: self.engine.current)),
        ]

    async def close(self) -> None:
        for task in self.background:
            task.cancel()
        if self.background:
            # A task caught in a client library that swallows the cancellation (a Redis pub/sub
            # being closed, a database call) must not hold the shutdown forever.
            _, stuck = await asyncio.wait(self.background, timeout=BACKGROUND_STOP_S)
            for task in stuck:
                logger.warning(
                    "background task %s did not stop within %s s", task.get_name(), BACKGROUND_STOP_S
                )
        await self.turns.drain()
        self.supervisor.shutdown()
        await self.webhooks.close()
        if self.redis is not None:
            await self.redis.aclose()
        await self.db_engine.dispose()


def build_turns(settings: Settings, parts: ConversationParts) -> ChatTurns:
    """The chat turn and its reply's stages; the model's judges and checks as settings say."""
    judges = settings.model_judges
    slots = ReplySlots(settings.max_pending_replies)
    shedding = CheckShedding(slots, parts.metrics, above=settings.shed_checks_above)
    finisher = ReplyFinisher(
        parts,
        checks=[figures_in_sources],
        judged={"unanswered": answered_the_question, "supported": supported_by_policy} if judges else {},
        strict_checks=[figures_in_matching_lines, grounded_in_matching_lines],
        source_picker=SourcePicker(parts.assembler.format) if judges else None,
        shedding=shedding,
    )
    policy = ReplyPolicy.of(settings)
    gates = [asks_for_person] if judges else []
    replies = Replies(parts, gates=gates, finisher=finisher, policy=policy, shedding=shedding)
    claims = TurnClaims(slots, parts.locks, ReplyStops())
    return ChatTurns(parts, claims=claims, decisions=[wait_for_agent], replies=replies)


def build_supervisor(
    settings: Settings,
    model_dir: Path,
    bots: BotRegistry,
    live: LiveEngine,
    engine: Engine | None,
    head_start: EngineHeadStart | None = None,
) -> EngineSupervisor:
    """Starts the engine (or takes the one given, or the one begun before), then attaches it
    and warms every bot."""
    window = settings.max_model_len

    async def attach(started: Engine) -> None:
        fixed = sum(len(ids) for live_bot in bots.values() for _, ids in live_bot.fixed_prompts())
        sizing = kv_sizing(
            model_dir,
            kv_cache_gib=kv_cache_gib(settings),  # as the engine gets it
            block_size=settings.block_size,
            dtype=engine_dtype(settings.dtype),
            fixed_tokens=fixed,
            conversation_tokens=settings.sizing_conversation_tokens,
        )
        logger.info("context window %d tokens; %s", window, sizing.describe(len(bots)))
        # Turns are taken at once; a bot still warming answers too, paying its own prefill.
        metered = MeteredEngine(started)  # each kind of request's cost, in /metrics
        live.attach(metered)
        if settings.warmup_on_start:  # so that the first customer of each bot already hits
            await bots.warm(metered)
        logger.info("ready: %d bots warm", len(bots))

    async def given() -> Engine:
        assert engine is not None
        return engine

    start = partial(start_engine, settings, model_dir, bots.slug_of_salt)
    return EngineSupervisor(
        start=given if engine is not None else head_start.first_then(start) if head_start else start,
        attach=attach,
        detach=live.detach,
        owns_engine=engine is None,
    )


async def build_services(
    settings: Settings, *, engine: Engine | None = None, head_start: EngineHeadStart | None = None
) -> Services:
    """Every part, from settings. Pass `engine` to serve on one already started (tests,
    benchmarks), `head_start` to take the engine begun loading before, and its tokenizer."""
    db_engine = create_db_engine(settings.database_url)
    sessions = create_session_factory(db_engine)
    redis = create_redis(settings.redis_url) if settings.redis_url else None
    stores = build_stores(settings, redis)
    new_work = partial(unit_of_work, sessions, stores.bus)

    model_dir = resolve_model_dir(settings.model, settings.cache_dir)
    settings = with_context_window(settings, model_dir)  # the model's own unless configured
    window = settings.max_model_len
    assert window is not None
    # A head start imports vLLM and transformers: its tokenizer is awaited rather than raced.
    loading = head_start.tokenizer() if head_start else asyncio.to_thread(load_tokenizer, model_dir)
    tokenizer = await loading
    assembler = PromptAssembler(ChatFormat(tokenizer))
    bots = BotRegistry(
        prompts_dir=settings.prompts_dir,
        secret_key=settings.secret_key,
        assembler=assembler,
        knowledge_budget=knowledge_budget(window, settings.conversation_room_tokens),
    )
    live = LiveEngine()
    context = ConversationContext(stores.sessions, bots.prefix_of_version)
    parts = ConversationParts(
        limits=TurnLimits.of(settings, window),
        engine=live,
        bots=bots,
        context=context,
        assembler=assembler,
        locks=TurnLocks(stores.turn_locks, ttl_s=settings.turn_lock_ttl_s),
        metrics=Metrics(stores.metrics),
        new_work=new_work,
    )
    turns = build_turns(settings, parts)
    reloads = PromptReloads(bots, live, new_work)
    listener = EventListener(stores.bus)
    listener.on(STATUS_CHANGED, turns.stop_reply_on_handoff)
    listener.on(PROMPTS_RELOADED, reloads.follow)
    identity_secret = settings.identity_secret.get_secret_value() if settings.identity_secret else None
    return Services(
        settings=settings,
        db_engine=db_engine,
        sessions=sessions,
        redis=redis,
        bus=stores.bus,
        listener=listener,
        metrics=parts.metrics,
        limits=RateLimits(stores.rate_limiter, settings),
        assembler=assembler,
        bots=bots,
        engine=live,
        supervisor=build_supervisor(settings, model_dir, bots, live, engine, head_start),
        context=context,
        claims=turns.claims,
        turns=turns,
        customers=CustomerConversations(
            bots=bots, assembler=assembler, max_model_len=window, identity_secret=identity_secret
        ),
        team=TeamDesk(bots=bots),
        inbox=InboxService(parts),
        erasures=Erasures(locks=parts.locks, context=context),
        reloads=reloads,
        webhooks=WebhookWorker(
            sessions,
            max_attempts=settings.webhook_max_attempts,
            backoff_base_s=settings.webhook_backoff_base_s,
            poll_interval_s=settings.webhook_poll_interval_s,
        ),
        origins=AllowedOrigins(
            settings.widget_origins,
            sessions,
            redis,
            key_prefix=settings.redis_key_prefix,
            ttl_s=settings.widget_origins_cache_s,
        ),
    )
