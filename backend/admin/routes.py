"""Bots and their prompt versions (admin), and reloading prompts/ without a restart."""

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel

from backend.admin.reloads import PromptReloads
from backend.agents.auth import CurrentAdmin
from backend.api.deps import Work, provided
from backend.api.errors import error_responses
from backend.conversations.repository import conversations_per_prompt_version
from backend.prompting import repository as prompts
from backend.prompting.registry import BotRegistry

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


class BotOut(BaseModel):
    slug: str
    name: str
    language: str
    versions: list[VersionOut]


@router.get("/bots", responses=ERRORS)
async def list_bots(_admin: CurrentAdmin, live: Bots, work: Work) -> list[BotOut]:
    """Every bot with its prompt versions, the one new conversations get marked current."""
    counts = await conversations_per_prompt_version(work.db)
    versions = await prompts.list_versions(work.db)
    return [
        BotOut(
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
                    current=bot.slug in live and live[bot.slug].prompt_version_id == v.id,
                )
                for v in versions
                if v.bot_id == bot.id
            ],
        )
        for bot in await prompts.list_bots(work.db)
    ]


@router.post("/prompts/reload", responses=ERRORS)
async def reload_prompts(
    _admin: CurrentAdmin, reloads: Annotated[PromptReloads, Depends(provided(PromptReloads))], work: Work
) -> dict[str, Any]:
    """Read prompts/ again in every app process. Changed prefixes are warmed before they take
    traffic; running conversations keep the version they started with."""
    return {"bots": await reloads.reload(work)}
