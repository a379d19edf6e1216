"""Behind a load balancer: the client a trusted proxy names in X-Forwarded-For gets its own
per-address rate limit; a host that is not trusted is its own client, whatever it claims."""

from contextlib import asynccontextmanager

import httpx

from tests.api.test_abuse_limits import inside_one_window
from tests.support import running_app

LIMIT = 2


@asynccontextmanager
async def from_host(app, host: str):
    transport = httpx.ASGITransport(app=app, client=(host, 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        yield client


async def config_from(client: httpx.AsyncClient, forwarded_for: str) -> int:
    response = await client.get("/api/v1/widget/config", headers={"x-forwarded-for": forwarded_for})
    return response.status_code


async def test_a_trusted_proxy_names_the_client_an_untrusted_host_does_not(tiny_settings, tiny_engine):
    settings = tiny_settings.model_copy(
        update={"trusted_proxies": ["10.0.0.0/24"], "rate_limit_requests_per_address": LIMIT}
    )
    async with running_app(settings, tiny_engine) as client:
        inside_one_window(client, settings)
        # Through the trusted balancer: each customer behind it has a bucket of their own.
        async with from_host(client.app, "10.0.0.7") as balancer:
            statuses = [await config_from(balancer, f"203.0.113.{n}") for n in range(LIMIT + 2)]
            assert statuses == [200] * (LIMIT + 2)
            assert [await config_from(balancer, "203.0.113.99") for _ in range(LIMIT + 1)][-1] == 429
        # A host outside the trusted network: its own address counts, not what it says.
        async with from_host(client.app, "198.51.100.5") as stranger:
            statuses = [await config_from(stranger, f"192.0.2.{n}") for n in range(LIMIT + 1)]
            assert statuses == [200] * LIMIT + [429]
