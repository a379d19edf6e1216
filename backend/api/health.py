"""Liveness and readiness."""

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from backend.api.deps import provided
from backend.engine.live import LiveEngine
from backend.engine.supervisor import EngineSupervisor
from backend.prompting.registry import BotRegistry

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
    """Ready once the model is loaded and every bot's fixed prefix has been warmed."""
    body: dict[str, object] = {
        "ready": engine.ready,
        "bots": sorted(bots),
        "engine": {"status": supervisor.status, "restarts": supervisor.restarts},
    }
    if supervisor.error:
        body["error"] = supervisor.error
    return JSONResponse(body, status_code=200 if engine.ready else 503)
