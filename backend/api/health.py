"""Liveness and readiness."""

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process answers: no dependency is checked."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    """Ready once the model is loaded and every bot's fixed prefix has been warmed."""
    chat = getattr(request.app.state, "chat", None)
    supervisor = getattr(request.app.state, "engine_supervisor", None)
    error = supervisor.error if supervisor else getattr(request.app.state, "startup_error", None)
    ready = bool(chat and chat.ready)
    body = {"ready": ready, "bots": sorted(chat.bots) if chat else []}
    if supervisor:
        body["engine"] = {"status": supervisor.status, "restarts": supervisor.restarts}
    if error:
        body["error"] = error
    return JSONResponse(body, status_code=200 if ready else 503)
