"""What the OpenAPI schema allows, the API accepts, and what it refuses, the API refuses: the
customer's identity (its e-mail above all), a message that is blank, text with a NUL."""

import re
import sys

import jsonschema_rs

from backend.api.inputs import NOT_BLANK
from tests.helpers import auth, start
from tests.support import make_agent

EMAILS = [
    "ada@example.com",
    "ADA+shop@example.co.uk",
    "名前@例え.jp",
    "a@b",
    "0" * 320,  # no @: once allowed by the schema, refused by the API
    "ada@example@com",
    "ada lovelace@example.com",
    "ada@example.com\n",
    "ada\t@example.com",
    "ada\x00@example.com",
    "\x7f@example.com",
    "@example.com",
    "ada@",
    "a" * 300 + "@" + "b" * 30,  # over 320 characters
]


def validator(schema: dict, name: str) -> jsonschema_rs.Validator:
    return jsonschema_rs.validator_for(
        {"$ref": f"#/components/schemas/{name}", **schema}, validate_formats=True
    )


async def test_an_identity_the_schema_allows_is_accepted_and_one_it_refuses_is_refused(client):
    identity_in = validator((await client.get("/openapi.json")).json(), "IdentityIn")
    identities = [{"email": email} for email in EMAILS] + [
        {"user_id": "cus\n1042"},
        {"name": "Ada\r\nLovelace"},
        {"name": "Ada\x00"},
        {"name": ""},
        {"user_id": "cus_1042", "name": "Ada Lovelace"},
    ]
    for identity in identities:
        response = await client.post(
            "/api/v1/widget/conversations", json={"bot": "shop-en", "identity": identity}
        )
        assert response.status_code in (201, 422), response.text
        assert (response.status_code == 201) == identity_in.is_valid(identity), (identity, response.text)
        if response.status_code == 422:
            assert response.json()["detail"].startswith("identity."), response.text


def test_not_blank_is_what_strip_keeps_in_every_regex_engine():
    """The schema's pattern for a message, read by jsonschema-rs (as clients and fuzzers read the
    schema) and by Python, says what `str.strip()` (the services' check) says, for every character."""
    declared = jsonschema_rs.validator_for({"type": "string", "pattern": NOT_BLANK})
    python = re.compile(NOT_BLANK)
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue  # lone surrogates: not text the API can receive
        text = f" {chr(code)} "
        kept = bool(text.strip())
        assert kept == declared.is_valid(text) == bool(python.search(text)), hex(code)


async def test_a_blank_message_or_a_nul_is_refused_as_the_schema_says(client):
    schema = (await client.get("/openapi.json")).json()
    send_message = validator(schema, "SendMessage")
    conversation = await start(client)
    url = f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages"
    for text in ["", " ", "\t\n\u3000", "a\x00b"]:
        assert not send_message.is_valid({"text": text}), repr(text)
        response = await client.post(url, json={"text": text}, headers=auth(conversation))
        assert response.status_code == 422, (text, response.text)
    assert send_message.is_valid({"text": " Hello "})


async def test_an_agents_reply_that_does_not_fit_the_context_window_is_a_conflict_not_bad_input(client):
    """The reply is as the schema says; the conversation is what has no room (409, like the customer's)."""
    _, agent = await make_agent(client.app)
    conversation = await start(client)
    too_long = " ".join(f"w{number}" for number in range(800))  # under 4,000 characters, ~1,600 tokens
    url = f"/api/v1/conversations/{conversation['conversation_id']}/messages"
    response = await client.post(url, json={"text": too_long}, headers=agent)
    assert response.status_code == 409, response.text
    assert response.json() == {
        "error": "context_window_full",
        "detail": "this reply does not fit in the model's context window",
    }
