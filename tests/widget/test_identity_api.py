"""Customer identity over HTTP: a good signature, a bad one (a clear 403), none (unverified),
malformed fields (422); agents see who the customer is and find them by e-mail."""

import uuid

from pydantic import SecretStr

from backend.conversations.identity import sign
from tests.support import make_agent, running_app

SECRET = "shop-identity-secret-for-http-tests"
WIDGET = "/api/v1/widget/conversations"
INBOX = "/api/v1/conversations"


async def test_identities_signed_unsigned_and_badly_signed(tiny_settings, tiny_engine):
    settings = tiny_settings.model_copy(update={"identity_secret": SecretStr(SECRET)})
    email = f"ada.{uuid.uuid4().hex[:8]}@example.com"
    async with running_app(settings, tiny_engine) as client:
        _, agent = await make_agent(client.app)
        signed = {"user_id": "cus_1042", "email": email, "name": "Ada Lovelace"}
        good = await client.post(
            WIDGET,
            json={
                "bot": "shop-en",
                "identity": {**signed, "signature": sign(SECRET, "cus_1042", email, "Ada Lovelace")},
            },
        )
        assert good.status_code == 201, good.text
        unsigned = await client.post(
            WIDGET, json={"bot": "shop-en", "identity": {"email": email, "name": "Ada?"}}
        )
        assert unsigned.status_code == 201, unsigned.text

        forged = await client.post(
            WIDGET,
            json={
                "bot": "shop-en",
                "identity": {
                    **signed,
                    "user_id": "cus_1",
                    "signature": sign(SECRET, "cus_1042", email, "Ada Lovelace"),
                },
            },
        )
        assert forged.status_code == 403
        assert forged.json()["error"] == "identity_not_verified"
        assert "signature does not match" in forged.json()["detail"]
        for bad in (
            {"email": "no-at-sign", "name": "Ada"},
            {"name": "Ada\nLovelace"},
            {"user_id": "cus_1", "signature": "not-hex"},
            {"user_id": "x" * 256},
        ):
            response = await client.post(WIDGET, json={"bot": "shop-en", "identity": bad})
            assert response.status_code == 422, (bad, response.text)
            assert response.json()["error"] == "invalid_input"

        # Agents see who the customer is, verified or not, and find them by e-mail (any case).
        found = await client.get(INBOX, params={"email": email.upper()}, headers=agent)
        assert found.status_code == 200, found.text
        customers = {item["id"]: item["customer"] for item in found.json()["items"]}
        assert customers == {
            good.json()["conversation_id"]: {**signed, "verified": True},
            unsigned.json()["conversation_id"]: {
                "user_id": None,
                "email": email,
                "name": "Ada?",
                "verified": False,
            },
        }
        searched = await client.get(INBOX, params={"q": email.split("@")[0]}, headers=agent)
        assert {item["id"] for item in searched.json()["items"]} == set(customers)
        detail = await client.get(f"{INBOX}/{good.json()['conversation_id']}", headers=agent)
        assert detail.json()["customer"] == {**signed, "verified": True}
        anonymous = await client.post(WIDGET, json={"bot": "shop-en"})
        detail = await client.get(f"{INBOX}/{anonymous.json()['conversation_id']}", headers=agent)
        assert detail.json()["customer"] is None


async def test_a_signature_without_a_secret_on_the_server_is_refused_clearly(client):
    response = await client.post(
        WIDGET, json={"bot": "shop-en", "identity": {"user_id": "cus_1", "signature": "a" * 64}}
    )
    assert response.status_code == 403
    assert "no identity secret" in response.json()["detail"]
