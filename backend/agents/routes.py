"""Agents, API tokens (admin) and canned responses."""

from fastapi import APIRouter, Request, status

from backend.agents import service
from backend.agents.auth import CurrentAdmin, CurrentAgent
from backend.agents.schemas import AgentCreated, AgentIn, AgentOut, CannedIn, CannedOut, NewToken, TokenOut
from backend.api.inputs import JsonRoute, RowIdPath
from backend.conversations.schemas import ErrorBody
from backend.errors import Forbidden

router = APIRouter(prefix="/api/v1", tags=["agents"], route_class=JsonRoute)
ERRORS = {code: {"model": ErrorBody} for code in (401, 403, 404, 409, 422)}


@router.get("/me", responses=ERRORS)
async def me(agent: CurrentAgent) -> AgentOut:
    return AgentOut.model_validate(agent)


@router.get("/agents", responses=ERRORS)
async def list_agents(_admin: CurrentAdmin, request: Request) -> list[AgentOut]:
    async with request.app.state.sessions() as db:
        return [AgentOut.model_validate(a) for a in await service.list_agents(db)]


@router.post("/agents", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def create_agent(body: AgentIn, _admin: CurrentAdmin, request: Request) -> AgentCreated:
    """Create an agent and its first API token (shown once)."""
    async with request.app.state.sessions() as db:
        agent = await service.create_agent(db, name=body.name, email=body.email, role=body.role)
        _token, plain = await service.issue_token(db, agent)
        await db.commit()
    return AgentCreated(agent=AgentOut.model_validate(agent), token=plain)


@router.get("/agents/{agent_id}/tokens", responses=ERRORS)
async def list_tokens(agent_id: RowIdPath, _admin: CurrentAdmin, request: Request) -> list[TokenOut]:
    async with request.app.state.sessions() as db:
        return [TokenOut.model_validate(t) for t in await service.list_tokens(db, agent_id)]


@router.post("/agents/{agent_id}/tokens", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def issue_token(agent_id: RowIdPath, _admin: CurrentAdmin, request: Request) -> NewToken:
    async with request.app.state.sessions() as db:
        token, plain = await service.issue_token(db, await service.get_agent(db, agent_id))
        await db.commit()
    return NewToken(token=plain, details=TokenOut.model_validate(token))


@router.delete("/tokens/{token_id}", responses=ERRORS)
async def revoke_token(token_id: RowIdPath, agent: CurrentAgent, request: Request) -> TokenOut:
    """Revoke a token: an admin any token, an agent their own."""
    async with request.app.state.sessions() as db:
        tokens = await service.list_tokens(db, agent.id)
        if agent.role != "admin" and token_id not in {t.id for t in tokens}:
            raise Forbidden("an agent can revoke only their own tokens")
        token = await service.revoke_token(db, token_id)
        await db.commit()
    return TokenOut.model_validate(token)


@router.get("/canned-responses", responses=ERRORS)
async def list_canned(_agent: CurrentAgent, request: Request) -> list[CannedOut]:
    async with request.app.state.sessions() as db:
        return [CannedOut.model_validate(c) for c in await service.list_canned(db)]


@router.post("/canned-responses", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def create_canned(body: CannedIn, agent: CurrentAgent, request: Request) -> CannedOut:
    async with request.app.state.sessions() as db:
        canned = await service.create_canned(db, shortcode=body.shortcode, text=body.text, agent=agent)
        await db.commit()
    return CannedOut.model_validate(canned)


@router.delete("/canned-responses/{canned_id}", status_code=status.HTTP_204_NO_CONTENT, responses=ERRORS)
async def delete_canned(canned_id: RowIdPath, _agent: CurrentAgent, request: Request) -> None:
    async with request.app.state.sessions() as db:
        await service.delete_canned(db, canned_id)
        await db.commit()
