"""Agents, API tokens (admin) and canned responses."""

from fastapi import APIRouter, status

from backend.agents import service
from backend.agents.auth import CurrentAdmin, CurrentAgent
from backend.agents.schemas import (
    AgentCreated,
    AgentIn,
    AgentName,
    AgentOut,
    CannedIn,
    CannedOut,
    NewToken,
    TokenOut,
)
from backend.api.deps import Work
from backend.api.errors import error_responses
from backend.api.inputs import JsonRoute, RowIdPath
from backend.errors import Forbidden

router = APIRouter(prefix="/api/v1", tags=["agents"], route_class=JsonRoute)
ERRORS = error_responses(401, 403, 404, 409, 422)


@router.get("/me", responses=ERRORS)
async def me(agent: CurrentAgent) -> AgentOut:
    return AgentOut.model_validate(agent)


@router.get("/agents/names", responses=ERRORS)
async def agent_names(_agent: CurrentAgent, work: Work) -> list[AgentName]:
    """Every agent's display name, for any agent: who replied, noted or has a conversation."""
    return [AgentName.model_validate(a) for a in await service.list_agents(work.db)]


@router.get("/agents", responses=ERRORS)
async def list_agents(_admin: CurrentAdmin, work: Work) -> list[AgentOut]:
    return [AgentOut.model_validate(a) for a in await service.list_agents(work.db)]


@router.post("/agents", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def create_agent(body: AgentIn, admin: CurrentAdmin, work: Work) -> AgentCreated:
    """Create an agent and its first API token (shown once)."""
    agent = await service.create_agent(work.db, name=body.name, email=body.email, role=body.role, by=admin)
    _token, plain = await service.issue_token(work.db, agent, by=admin)
    return AgentCreated(agent=AgentOut.model_validate(agent), token=plain)


@router.get("/agents/{agent_id}/tokens", responses=ERRORS)
async def list_tokens(agent_id: RowIdPath, _admin: CurrentAdmin, work: Work) -> list[TokenOut]:
    return [TokenOut.model_validate(t) for t in await service.list_tokens(work.db, agent_id)]


@router.post("/agents/{agent_id}/tokens", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def issue_token(agent_id: RowIdPath, admin: CurrentAdmin, work: Work) -> NewToken:
    token, plain = await service.issue_token(work.db, await service.get_agent(work.db, agent_id), by=admin)
    return NewToken(token=plain, details=TokenOut.model_validate(token))


@router.delete("/tokens/{token_id}", responses=ERRORS)
async def revoke_token(token_id: RowIdPath, agent: CurrentAgent, work: Work) -> TokenOut:
    """Revoke a token: an admin any token, an agent their own."""
    tokens = await service.list_tokens(work.db, agent.id)
    if agent.role != "admin" and token_id not in {t.id for t in tokens}:
        raise Forbidden("an agent can revoke only their own tokens")
    token = await service.revoke_token(work.db, token_id, by=agent)
    await work.db.flush()
    return TokenOut.model_validate(token)


@router.get("/canned-responses", responses=ERRORS)
async def list_canned(_agent: CurrentAgent, work: Work) -> list[CannedOut]:
    return [CannedOut.model_validate(c) for c in await service.list_canned(work.db)]


@router.post("/canned-responses", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def create_canned(body: CannedIn, agent: CurrentAgent, work: Work) -> CannedOut:
    canned = await service.create_canned(work.db, shortcode=body.shortcode, text=body.text, agent=agent)
    return CannedOut.model_validate(canned)


@router.delete("/canned-responses/{canned_id}", status_code=status.HTTP_204_NO_CONTENT, responses=ERRORS)
async def delete_canned(canned_id: RowIdPath, _agent: CurrentAgent, work: Work) -> None:
    await service.delete_canned(work.db, canned_id)
