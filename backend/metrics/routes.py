"""The admin page's figures, and Prometheus' /metrics."""

import hmac
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from backend.agents.auth import CurrentAdmin
from backend.api.deps import provided
from backend.api.errors import error_responses
from backend.config import Settings
from backend.errors import Forbidden
from backend.metrics.recorder import Metrics
from backend.metrics.schemas import MetricsSummary
from backend.metrics.summary import summarize

router = APIRouter(tags=["admin: metrics"])
LOOPBACK = {"127.0.0.1", "::1"}


@router.get("/api/v1/admin/metrics", responses=error_responses(401, 403, 422))
async def admin_metrics(
    _admin: CurrentAdmin,
    metrics: Annotated[Metrics, Depends(provided(Metrics))],
    window: Annotated[int, Query(ge=60, le=24 * 3600, description="Seconds back from now.")] = 900,
) -> MetricsSummary:
    """Over the window: replies per second, response time and time-to-first-token percentiles,
    the replies' prefix-cache hit rate, reply speed, active conversations, per bot and as a
    series of buckets; vLLM's own counters (prefix cache, drafts) and the engines' mean load;
    and the engines' gauges now. From the store every app process writes."""
    return await summarize(metrics.store, window)


@router.get("/metrics", include_in_schema=False)
async def prometheus(
    request: Request,
    settings: Annotated[Settings, Depends(provided(Settings))],
    authorization: Annotated[str | None, Header()] = None,
) -> Response:
    """Prometheus format: the app's request and reply metrics, and vLLM's own (`vllm:*`).

    With PREFIXDESK_METRICS_TOKEN set, scrapers send it as a bearer token; without it, only
    loopback clients may read (a sidecar or a local Prometheus).
    """
    token = settings.metrics_token
    if token:
        offered = (authorization or "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(offered, token):
            raise Forbidden("send PREFIXDESK_METRICS_TOKEN as a bearer token")
    elif request.client is None or request.client.host not in LOOPBACK:
        raise Forbidden("/metrics is served to loopback clients unless PREFIXDESK_METRICS_TOKEN is set")
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
