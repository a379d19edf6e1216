"""Agents, their API tokens and canned responses."""

import re
import secrets

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.agents import audit
from backend.agents.models import Agent, AgentRole, ApiToken, CannedResponse
from backend.db import utcnow
from backend.errors import Conflict, NotFound
from backend.tokens import digest, matches

TOKEN_PREFIX = "pdk_"  # noqa: S105 (a label, not a secret): tells an agent token apart from a customer's widget token at a glance
SHORTCODE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


async def create_agent(
    db: AsyncSession, *, name: str, email: str, role: AgentRole, by: Agent | None
) -> Agent:
    """`by`: the admin who creates it (None: the command line), for the audit log."""
    if await db.scalar(select(Agent).where(Agent.email == email)):
        raise Conflict(f"an agent with e-mail {email!r} already exists")
    agent = Agent(name=name, email=email, role=role)
    db.add(agent)
    await db.flush()
    audit.record(db, by, audit.AGENT_CREATED, "agent", agent.id, name=name, role=role.value)
    return agent


async def issue_token(db: AsyncSession, agent: Agent, *, by: Agent | None) -> tuple[ApiToken, str]:
    """A new token for `agent`; the plain token is returned once and never stored."""
    plain = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(agent_id=agent.id, token_hash=digest(plain), display_prefix=plain[:10])
    db.add(token)
    await db.flush()
    audit.record(
        db, by, audit.TOKEN_CREATED, "token", token.id, agent_id=agent.id, display_prefix=token.display_prefix
    )
    return token, plain


async def authenticate(db: AsyncSession, plain: str) -> Agent | None:
    """The active agent a live token belongs to, or None."""
    token = await db.scalar(select(ApiToken).where(ApiToken.token_hash == digest(plain)))
    # The lookup is by digest; compare again in constant time so no timing tells how much matched.
    if token is None or not matches(plain, token.token_hash):
        return None
    if token.revoked_at is not None or not token.agent.active:
        return None
    token.last_used_at = utcnow()
    return token.agent


async def revoke_token(db: AsyncSession, token_id: int, *, by: Agent | None) -> ApiToken:
    token = await db.get(ApiToken, token_id)
    if token is None:
        raise NotFound(f"no token {token_id}")
    if token.revoked_at is None:
        token.revoked_at = utcnow()
        audit.record(db, by, audit.TOKEN_REVOKED, "token", token.id, agent_id=token.agent_id)
    return token


async def list_agents(db: AsyncSession) -> list[Agent]:
    return list(await db.scalars(select(Agent).order_by(Agent.id)))


async def get_agent(db: AsyncSession, agent_id: int) -> Agent:
    agent = await db.get(Agent, agent_id)
    if agent is None or not agent.active:
        raise NotFound(f"no active agent {agent_id}")
    return agent


async def list_tokens(db: AsyncSession, agent_id: int) -> list[ApiToken]:
    return list(await db.scalars(select(ApiToken).where(ApiToken.agent_id == agent_id).order_by(ApiToken.id)))


async def list_canned(db: AsyncSession) -> list[CannedResponse]:
    return list(await db.scalars(select(CannedResponse).order_by(CannedResponse.shortcode)))


async def create_canned(db: AsyncSession, *, shortcode: str, text: str, agent: Agent) -> CannedResponse:
    if not SHORTCODE.match(shortcode):
        raise Conflict("a shortcode is lower-case letters, digits, '-' and '_'")
    if await db.scalar(select(CannedResponse).where(CannedResponse.shortcode == shortcode)):
        raise Conflict(f"shortcode {shortcode!r} exists")
    canned = CannedResponse(shortcode=shortcode, text=text, created_by=agent.id)
    db.add(canned)
    await db.flush()
    return canned


async def delete_canned(db: AsyncSession, canned_id: int) -> None:
    canned = await db.get(CannedResponse, canned_id)
    if canned is None:
        raise NotFound(f"no canned response {canned_id}")
    await db.delete(canned)


# Who a canned response speaks to and as, when the name is unknown.
UNKNOWN_CUSTOMER_NAME = "there"  # "Hi {customer_name}" -> "Hi there"
UNKNOWN_AGENT_NAME = "the support team"


def fill_variables(text: str, *, customer_name: str | None, agent_name: str | None) -> str:
    """A canned response's `{customer_name}` and `{agent_name}`; other braces stay as written."""
    return text.replace("{customer_name}", customer_name or UNKNOWN_CUSTOMER_NAME).replace(
        "{agent_name}", agent_name or UNKNOWN_AGENT_NAME
    )


async def expand_shortcode(db: AsyncSession, text: str, *, customer_name: str | None, agent_name: str) -> str:
    """`/refund` becomes the canned response with shortcode `refund`, its variables filled; other
    text is left as it is."""
    if not text.startswith("/") or " " in text.strip():
        return text
    canned = await db.scalar(select(CannedResponse).where(CannedResponse.shortcode == text.strip()[1:]))
    if canned is None:
        raise NotFound(f"no canned response {text.strip()!r}")
    return fill_variables(canned.text, customer_name=customer_name, agent_name=agent_name)
