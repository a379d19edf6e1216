"""Customer identity through `CustomerConversations`: signed by the shop's server it is stored
verified; unsigned, unverified; a signature that does not match is refused and nothing is stored."""

import uuid

import pytest
from pydantic import SecretStr
from sqlalchemy import func, select

from backend.conversations.identity import canonical, sign
from backend.conversations.models import Conversation
from backend.conversations.schemas import IdentityIn
from backend.errors import Forbidden
from backend.inbox.repository import ConversationFilter
from tests.helpers import stored

SECRET = "shop-identity-secret-for-tests"
EXAMPLE_DIGEST = "b00a23fbb10ff881f8eb75ac9c16fa0241d8de71e759f20fd5a0335600d49330"


async def start_as(services, identity: IdentityIn):
    async with services.new_work() as work:
        return await services.customers.start(work, "shop-en", None, identity)


def test_the_canonical_form_is_the_fields_joined_by_newlines_with_missing_ones_empty():
    assert canonical("cus_1", "ada@example.com", "Ada") == b"cus_1\nada@example.com\nAda"
    assert canonical("cus_1", None, None) == b"cus_1\n\n"
    # The digest of the README's example, as its Python and Node snippets compute it.
    assert sign("s3cret", "cus_1042", "ada@example.com", "Ada Lovelace") == EXAMPLE_DIGEST


async def test_a_signed_identity_is_stored_verified(make_services):
    services = await make_services(identity_secret=SecretStr(SECRET))
    email = f"{uuid.uuid4().hex[:8]}@example.com"
    signature = sign(SECRET, "cus_1042", email, "Ada Lovelace")
    started = await start_as(
        services, IdentityIn(user_id="cus_1042", email=email, name="Ada Lovelace", signature=signature)
    )

    conversation, _ = await stored(services, started.conversation.id)
    assert (conversation.customer_user_id, conversation.customer_email, conversation.customer_name) == (
        "cus_1042",
        email,
        "Ada Lovelace",
    )
    assert conversation.identity_verified is True
    # Upper-case hex is the same digest.
    again = await start_as(
        services,
        IdentityIn(user_id="cus_1042", email=email, signature=sign(SECRET, "cus_1042", email, None).upper()),
    )
    assert (await stored(services, again.conversation.id))[0].identity_verified is True


async def test_an_unsigned_identity_is_stored_unverified(make_services):
    for services in (await make_services(identity_secret=SecretStr(SECRET)), await make_services()):
        started = await start_as(services, IdentityIn(email="who@example.com", name="Someone"))
        conversation, _ = await stored(services, started.conversation.id)
        assert (conversation.customer_email, conversation.customer_name) == ("who@example.com", "Someone")
        assert conversation.identity_verified is False


async def test_a_signature_that_does_not_match_is_refused_and_nothing_is_stored(make_services):
    services = await make_services(identity_secret=SecretStr(SECRET))
    email = f"{uuid.uuid4().hex[:8]}@example.com"
    good = sign(SECRET, "cus_1", email, "Ada")

    async def conversations_of(address: str) -> int:
        async with services.new_work() as work:
            query = (
                select(func.count()).select_from(Conversation).where(Conversation.customer_email == address)
            )
            return int(await work.db.scalar(query) or 0)

    attempts = [
        IdentityIn(user_id="cus_2", email=email, name="Ada", signature=good),  # someone else's id
        IdentityIn(user_id="cus_1", email=email, name="Eve", signature=good),  # another name
        IdentityIn(
            user_id="cus_1", email=email, name="Ada", signature=sign("another secret", "cus_1", email, "Ada")
        ),
        IdentityIn(user_id="cus_1", email=email, name="Ada", signature="0" * 64),
    ]
    for identity in attempts:
        with pytest.raises(Forbidden, match="signature does not match"):
            await start_as(services, identity)
    assert await conversations_of(email) == 0

    # Signed, but this server has no secret to check it with: refused too, saying why.
    unconfigured = await make_services()
    with pytest.raises(Forbidden, match="no identity secret"):
        await start_as(unconfigured, IdentityIn(user_id="cus_1", email=email, name="Ada", signature=good))


async def test_the_inbox_finds_conversations_by_the_customers_email(make_services):
    services = await make_services(identity_secret=SecretStr(SECRET))
    email = f"Ada.{uuid.uuid4().hex[:8]}@Example.com"
    verified = await start_as(services, IdentityIn(email=email, signature=sign(SECRET, None, email, None)))
    claimed = await start_as(services, IdentityIn(email=email.lower()))
    await start_as(services, IdentityIn(email="someone.else@example.com"))

    async with services.new_work() as work:
        exact, total, _ = await services.inbox.page(
            work, ConversationFilter(email=email.upper()), page=1, page_size=10
        )
        searched, _, _ = await services.inbox.page(
            work, ConversationFilter(text=email.split("@")[0].lower()), page=1, page_size=10
        )
    assert {c.id for c in exact} == {verified.conversation.id, claimed.conversation.id} and total == 2
    assert {c.id for c in searched} == {verified.conversation.id, claimed.conversation.id}
    assert {c.id: c.identity_verified for c in exact} == {
        verified.conversation.id: True,
        claimed.conversation.id: False,
    }
