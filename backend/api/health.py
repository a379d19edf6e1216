"""Liveness and readiness."""

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from backend.api.deps import provided
from backend.bots.registry import BotRegistry
from backend.engine.live import LiveEngine
from backend.engine.supervisor import EngineSupervisor

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process answers: no dependency is checked."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(
    engine: Annotated[LiveEngine, Depends(provided(LiveEngine))],
    supervisor: Annotated[EngineSupervisor, Depends(provided(EngineSupervisor))],
    bots: Annotated[BotRegistry, Depends(provided(BotRegistry))],
) -> JSONResponse:
    """Ready once the model is loaded and no bot's fixed prefix is still being warmed.

    Turns are taken before that (a bot still warming pays its own prefill); `bots` says which
    are warm, so a long help center being computed shows as such."""
    ready = engine.ready and not bots.warming
    body: dict[str, object] = {
        "ready": ready,
        "bots": {slug: bots.warmth.get(slug, "cold") for slug in sorted(bots)},
        "engine": {"status": supervisor.status, "restarts": supervisor.restarts},
    }
    if supervisor.error:
        body["error"] = supervisor.error
    return JSONResponse(body, status_code=200 if ready else 503)
