"""Who is calling the agent API: named dependencies per role."""

from typing import Annotated

from fastapi import Depends, Header

from backend.agents import service
from backend.agents.models import Agent, AgentRole
from backend.api.deps import Work
from backend.errors import Forbidden, Unauthorized


async def current_agent(
    work: Work,
    authorization: Annotated[str | None, Header(description="Bearer <agent API token>")] = None,
) -> Agent:
    if not authorization or not authorization.lower().startswith("bearer "):
        raise Unauthorized("send an agent API token as 'Authorization: Bearer <token>'")
    agent = await service.authenticate(work.db, authorization[7:].strip())
    if agent is None:
        raise Unauthorized("this token is not a valid agent API token (unknown or revoked)")
    return agent


async def current_admin(agent: Annotated[Agent, Depends(current_agent)]) -> Agent:
    if agent.role != AgentRole.ADMIN:
        raise Forbidden("this needs an admin token")
    return agent


CurrentAgent = Annotated[Agent, Depends(current_agent)]
CurrentAdmin = Annotated[Agent, Depends(current_admin)]
