"""Schemathesis over the app's own OpenAPI spec, on the real stack, with every check it has: no
input makes it fail (5xx), and the app answers as its spec says (statuses, content types, bodies,
headers), accepts what the spec allows, refuses what it does not, and answers the methods a path
does not declare with a 405 whose `Allow` lists those it does (OPTIONS: 204 with `Allow`).

Every operation is fuzzed as an admin agent, as a conversation's customer and without
credentials, with data that fits the spec and data that does not, against the app served
on loopback: first schemathesis' coverage cases (each parameter's edges, each constraint broken
in turn, the undeclared methods) and the spec's examples, then generated data. Hypothesis runs
derandomized, so each run sends the same requests.
"""

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.core.failures import FailureGroup
from schemathesis.generation.hypothesis.builder import HypothesisTestConfig, HypothesisTestMode, create_test
from schemathesis.generation.overrides import Override
from schemathesis.specs.openapi.checks import positive_data_acceptance

from backend.agents.models import AgentRole
from backend.migrate import upgrade
from tests.helpers import done_event, send, start
from tests.support import (
    TEST_DATABASE,
    client_app,
    drop_database,
    make_agent,
    recreate_database,
    served,
    wait_ready,
)

# These stream until the client goes away: a fuzzed request would hang until its timeout.
# Their authorization is the same dependency the fuzzed widget and agent operations use.
ENDLESS_STREAMS = {
    ("GET", "/api/v1/events"),
    ("GET", "/api/v1/widget/conversations/{conversation_id}/events"),
}
load_all_checks()
CHECKS_ALL = list(CHECKS.get_all())  # schemathesis' full set, as `--checks all`
# Rules across parameters, which an OpenAPI schema cannot state: data that fits the spec may break
# them, and the 422 says which. Any other refusal of data that fits the spec fails the test.
ACROSS_PARAMETERS = ("'from' must be before 'to'", "an export covers at most")
# A body over the app's size limit is refused as too large (413) before it is read.
REFUSALS = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]
CONFIG = {"checks": {"negative_data_rejection": {"expected-statuses": REFUSALS}}}
EXAMPLES = {"own": 15, "other": 4}  # generated, per operation, identity and generation mode
# Reached with a real reply's id, not only refused: a customer rates the bot's reply.
FEEDBACK = "PUT /api/v1/widget/conversations/{conversation_id}/messages/{message_id}/feedback"
HYPOTHESIS = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
async def fuzz_settings(tiny_settings) -> AsyncIterator:
    """A database of its own: what fuzzing creates (agents, canned responses, webhooks) stays here."""
    name = f"{TEST_DATABASE}_fuzz"
    url = await recreate_database(name)
    await asyncio.to_thread(upgrade, url)
    yield tiny_settings.model_copy(
        update={
            "database_url": url,
            "rate_limit_messages_per_conversation": 1_000_000,
            # Fuzzed webhooks point anywhere; nothing should be sent to them.
            "webhook_poll_interval_s": 3600.0,
        }
    )
    await drop_database(name)


@dataclass
class Run:
    examples: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    statuses_by_operation: dict[str, set[int]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def fuzz_operation(operation, url: str, headers: dict[str, str], real_ids: dict, examples: int, run: Run):
    session = requests.Session()
    ids = {p.name: real_ids[p.name] for p in operation.path_parameters if p.name in real_ids}

    def check(case):
        run.examples += 1
        response = case.call(base_url=url, session=session, headers=headers, timeout=30)
        run.statuses[response.status_code] = run.statuses.get(response.status_code, 0) + 1
        run.statuses_by_operation.setdefault(operation.label, set()).add(response.status_code)
        across = response.status_code == 422 and any(rule in response.text for rule in ACROSS_PARAMETERS)
        excluded = [positive_data_acceptance] if across else []
        case.validate_response(response, checks=CHECKS_ALL, excluded_checks=excluded, headers=headers)

    for test in (explicit_cases(operation, ids, check), generated_cases(operation, ids, examples, check)):
        try:
            test()
        except (Exception, FailureGroup) as error:
            run.failures.append(f"{operation.label}: {str(error)[:2000]}")  # bodies may be huge


def explicit_cases(operation, ids: dict, check: Callable) -> Callable:
    """Schemathesis' coverage cases and the spec's examples, on the real ids where there are some."""
    return create_test(
        operation=operation,
        test_func=check,
        config=HypothesisTestConfig(
            project=operation.schema.config,
            modes=[HypothesisTestMode.EXAMPLES, HypothesisTestMode.COVERAGE],
            settings=settings(HYPOTHESIS, phases=[Phase.explicit]),
            override=Override(path_parameters=ids),
        ),
    )


def generated_cases(operation, ids: dict, examples: int, check: Callable) -> Callable:
    """Data that fits the spec and data that does not, on drawn ids and on the real ones."""
    strategies = [operation.as_strategy(mode) for mode in schemathesis.GenerationMode]
    if ids:
        strategies += [
            operation.as_strategy(mode, path_parameters=ids) for mode in schemathesis.GenerationMode
        ]
    limits = settings(HYPOTHESIS, max_examples=examples * len(strategies), phases=[Phase.generate])
    return limits(given(case=st.one_of(strategies))(check))


async def test_every_fuzzed_request_is_answered_as_the_spec_says(fuzz_settings, tiny_engine, record_property):
    async with (
        served(fuzz_settings, tiny_engine) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        await wait_ready(client)
        app = client_app(url)
        conversation = await start(client)
        reply = done_event(await send(client, conversation, "Hello"))  # a reply the customer may rate
        _, admin = await make_agent(app, AgentRole.ADMIN)
        agent_id, _agent = await make_agent(app)
        identities = {
            "admin": admin,
            "customer": {"Authorization": f"Bearer {conversation['customer_token']}"},
            "anonymous": {},
        }
        real_ids = {
            "conversation_id": conversation["conversation_id"],
            "message_id": reply["message_id"],
            "agent_id": agent_id,
            "token_id": (await client.post(f"/api/v1/agents/{agent_id}/tokens", headers=admin)).json()[
                "details"
            ]["id"],
            "canned_id": (
                await client.post(
                    "/api/v1/canned-responses", headers=admin, json={"shortcode": "fuzz", "text": "Hello"}
                )
            ).json()["id"],
            "webhook_id": (
                await client.post("/api/v1/webhooks", headers=admin, json={"url": "http://127.0.0.1:9/"})
            ).json()["id"],
        }
        schema = schemathesis.openapi.from_dict(app.openapi(), config=schemathesis.Config.from_dict(CONFIG))
        run = Run()
        began = time.monotonic()
        for result in schema.get_all_operations():
            operation = result.ok()
            if (operation.method.upper(), operation.path) in ENDLESS_STREAMS:
                continue
            own = "customer" if operation.path.startswith("/api/v1/widget/") else "admin"
            for name in identities:
                examples = EXAMPLES["own" if name == own else "other"]
                headers = identities[name]
                await asyncio.to_thread(fuzz_operation, operation, url, headers, real_ids, examples, run)
            # A fuzzed DELETE /api/v1/tokens/{token_id} may have revoked the admin's token.
            _, identities["admin"] = await make_agent(app, AgentRole.ADMIN)
        elapsed = time.monotonic() - began
    record_property("schemathesis_examples", run.examples)
    record_property("schemathesis_seconds", round(elapsed, 1))
    print(
        f"schemathesis: {run.examples} examples in {elapsed:.1f} s; statuses {sorted(run.statuses.items())}"
    )
    assert not run.failures, "\n\n".join(run.failures)
    assert run.statuses.get(200, 0) + run.statuses.get(201, 0) > 100  # the fuzzing got past validation
    assert 200 in run.statuses_by_operation[FEEDBACK], run.statuses_by_operation.get(FEEDBACK)
