"""Bots and their prompt versions (admin), and reloading prompts/ without a restart."""

from datetime import datetime

from fastapi import APIRouter, Request
from pydantic import BaseModel
from sqlalchemy import func, select

from backend.agents.auth import CurrentAdmin
from backend.conversations.models import Bot, Conversation, PromptVersion
from backend.conversations.schemas import ErrorBody
from backend.events.bus import PROMPTS_RELOADED, Event, publish_all

router = APIRouter(prefix="/api/v1/admin", tags=["admin: prompts"])
ERRORS = {code: {"model": ErrorBody} for code in (401, 403, 422)}


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
async def list_bots(_admin: CurrentAdmin, request: Request) -> list[BotOut]:
    """Every bot with its prompt versions, the one new conversations get marked current."""
    live = request.app.state.chat.bots
    async with request.app.state.sessions() as db:
        counts = dict(
            (
                await db.execute(
                    select(Conversation.prompt_version_id, func.count()).group_by(
                        Conversation.prompt_version_id
                    )
                )
            ).all()
        )
        bots = list(await db.scalars(select(Bot).order_by(Bot.slug)))
        versions = list(await db.scalars(select(PromptVersion).order_by(PromptVersion.id)))
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
        for bot in bots
    ]


@router.post("/prompts/reload", responses=ERRORS)
async def reload_prompts(_admin: CurrentAdmin, request: Request) -> dict:
    """Read prompts/ again in every app process. Changed prefixes are warmed before they take
    traffic; running conversations keep the version they started with."""
    chat = request.app.state.chat
    bots = await chat.reload_bots()
    await publish_all(chat.events, [Event(PROMPTS_RELOADED, "", {"origin": chat.instance_id})])
    return {"bots": bots}
