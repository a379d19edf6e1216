"""Bots and their prompt versions (admin), and reloading prompts/ without a restart."""

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from backend.admin.reloads import PromptReloads
from backend.agents import audit
from backend.agents.auth import CurrentAdmin
from backend.api.deps import Work, provided
from backend.api.errors import error_responses
from backend.bots import repository as prompts
from backend.bots.models import Bot as BotRow
from backend.bots.registry import BotRegistry, LiveBot, Warmth
from backend.conversations.repository import conversations_per_prompt_version

router = APIRouter(prefix="/api/v1/admin", tags=["admin: prompts"])
ERRORS = error_responses(401, 403, 422)
Bots = Annotated[BotRegistry, Depends(provided(BotRegistry))]


class VersionOut(BaseModel):
    id: int
    digest: str
    prefix_tokens: int
    conversations: int
    created_at: datetime
    current: bool


class HelpCenterOut(BaseModel):
    articles: int = Field(description="Articles in the help center of the version served.")
    tokens: int = Field(
        description="Tokens the articles add to the fixed prefix (counted even when they do not fit)."
    )
    in_prefix: bool = Field(
        description="True: compiled into the fixed prefix. False: too long for it, so the articles that "
        "match each question are brought beside it."
    )


class BotOut(BaseModel):
    slug: str
    name: str
    language: str
    versions: list[VersionOut]
    warmth: Warmth | None = Field(
        description="Whether this process has its fixed prefix in the engine's prefix cache: "
        '"cold", "warming" (being computed) or "warm". Null when this process does not serve the bot.'
    )
    prefix_tokens: int | None = Field(
        description="Tokens in the fixed prefix of the version this process serves (null when it does not)."
    )
    help_center: HelpCenterOut | None = Field(
        description="The help center of the version this process serves; null when the bot has none "
        "or this process does not serve it."
    )


def help_center(served: LiveBot) -> HelpCenterOut | None:
    if not served.definition.knowledge:
        return None
    return HelpCenterOut(
        articles=len(served.definition.knowledge),
        tokens=served.prefix.knowledge_tokens,
        in_prefix=served.prefix.knowledge_in_prefix,
    )


@router.get("/bots", responses=ERRORS)
async def list_bots(_admin: CurrentAdmin, live: Bots, work: Work) -> list[BotOut]:
    """Every bot with its prompt versions, the one new conversations get marked current, and
    how this process serves it: its fixed prefix's warmth and tokens, and its help center."""
    counts = await conversations_per_prompt_version(work.db)
    versions = await prompts.list_versions(work.db)

    def out(bot: BotRow) -> BotOut:
        served = live.get(bot.slug)
        return BotOut(
            slug=bot.slug,
            name=bot.name,
            language=bot.language,
            versions=[
                VersionOut(
                    id=v.id,
                    digest=v.digest,
                    prefix_tokens=len(v.prefix_token_ids),
                    conversations=counts.get(v.id, 0),
                    created_at=v.created_at,
                    current=served is not None and served.prompt_version_id == v.id,
                )
                for v in versions
                if v.bot_id == bot.id
            ],
            warmth=None if served is None else live.warmth.get(bot.slug, "cold"),
            prefix_tokens=None if served is None else len(served.prefix.token_ids),
            help_center=None if served is None else help_center(served),
        )

    return [out(bot) for bot in await prompts.list_bots(work.db)]


@router.post("/prompts/reload", responses=ERRORS)
async def reload_prompts(
    admin: CurrentAdmin, reloads: Annotated[PromptReloads, Depends(provided(PromptReloads))], work: Work
) -> dict[str, Any]:
    """Read prompts/ again in every app process. Changed prefixes are warmed before they take
    traffic; running conversations keep the version they started with. Recorded in the audit
    log with the bots that changed."""
    bots = await reloads.reload(work)
    changed = sorted(slug for slug, bot in bots.items() if bot["changed"])
    audit.record(work.db, admin, audit.PROMPTS_RELOADED, "prompts", None, changed=changed)
    return {"bots": bots}
