"""Closing the app's services while the bots' prefixes are still being warmed ends at once."""

import asyncio

from backend.services import build_services
from tests.api.test_server import GatedEngine


async def test_services_close_while_the_warm_up_waits(tiny_settings, tiny_engine):
    gate = asyncio.Event()  # the warm-up never gets the engine
    services = await build_services(tiny_settings, engine=GatedEngine(tiny_engine, gate))
    await services.start()
    await services.engine.wait()
    assert services.bots.warming
    await asyncio.wait_for(services.close(), timeout=30)
