"""The admin page's figures, and Prometheus' /metrics."""

import hmac
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from backend.agents.auth import CurrentAdmin
from backend.conversations.schemas import ErrorBody
from backend.errors import Forbidden
from backend.metrics.summary import summarize

router = APIRouter(tags=["admin: metrics"])
LOOPBACK = {"127.0.0.1", "::1"}


@router.get("/api/v1/admin/metrics", responses={c: {"model": ErrorBody} for c in (401, 403, 422)})
async def admin_metrics(
    _admin: CurrentAdmin,
    request: Request,
    window: Annotated[int, Query(ge=60, le=24 * 3600, description="Seconds back from now.")] = 900,
) -> dict:
    """QPS, response time percentiles (total and TTFT), cache hit rate, engine load, per bot; from
    the store every app process writes, with vLLM's own prefix-cache counters beside them."""
    return await summarize(request.app.state.metrics.store, window)


@router.get("/metrics", include_in_schema=False)
async def prometheus(request: Request, authorization: Annotated[str | None, Header()] = None) -> Response:
    """Prometheus format: the app's request and reply metrics, and vLLM's own (`vllm:*`).

    With PREFIXDESK_METRICS_TOKEN set, scrapers send it as a bearer token; without it, only
    loopback clients may read (a sidecar or a local Prometheus).
    """
    token = request.app.state.settings.metrics_token
    if token:
        offered = (authorization or "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(offered, token):
            raise Forbidden("send PREFIXDESK_METRICS_TOKEN as a bearer token")
    elif request.client is None or request.client.host not in LOOPBACK:
        raise Forbidden("/metrics is served to loopback clients unless PREFIXDESK_METRICS_TOKEN is set")
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
