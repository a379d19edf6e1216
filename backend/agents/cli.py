"""`prefixdesk agents ...`: create agents and manage their API tokens from the shell."""

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import typer
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.agents import service
from backend.agents.models import Agent, AgentRole, ApiToken
from backend.config import settings_given
from backend.db import create_db_engine, create_session_factory
from backend.errors import AppError

agents_app = typer.Typer(help="Support agents and their API tokens.", no_args_is_help=True)


T = TypeVar("T")


async def _in_session(database_url: str, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    engine = create_db_engine(database_url)
    try:
        async with create_session_factory(engine)() as db:
            result = await work(db)
            await db.commit()
            return result
    finally:
        await engine.dispose()


def _run(database_url: str, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    try:
        return asyncio.run(_in_session(database_url, work))
    except AppError as error:
        typer.secho(f"error: {error.message}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from error


@agents_app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Option(help="Display name.")],
    email: Annotated[str, typer.Option(help="Unique e-mail address.")],
    role: Annotated[AgentRole, typer.Option(help="agent or admin.")] = AgentRole.AGENT,
) -> None:
    """Create an agent and print its API token (shown this once; only its hash is stored)."""

    async def work(db: AsyncSession) -> tuple[int, str]:
        agent = await service.create_agent(db, name=name, email=email, role=role, by=None)
        _token, plain = await service.issue_token(db, agent, by=None)
        return agent.id, plain

    agent_id, plain = _run(settings_given(ctx.obj).database_url, work)
    typer.echo(f"agent {agent_id} ({role.value}) created; API token (shown once):\n{plain}")


@agents_app.command("token")
def token(
    ctx: typer.Context, email: Annotated[str, typer.Argument(help="The agent's e-mail address.")]
) -> None:
    """Issue another API token for an agent (shown once)."""

    async def work(db: AsyncSession) -> tuple[int, str]:
        agent = await db.scalar(select(Agent).where(Agent.email == email))
        if agent is None:
            raise AppError(f"no agent with e-mail {email!r}")
        token, plain = await service.issue_token(db, agent, by=None)
        return token.id, plain

    token_id, plain = _run(settings_given(ctx.obj).database_url, work)
    typer.echo(f"token {token_id} issued (shown once):\n{plain}")


@agents_app.command("revoke")
def revoke(
    ctx: typer.Context, token_id: Annotated[int, typer.Argument(help="The token's id (see `agents list`).")]
) -> None:
    """Revoke an API token: it stops working at once, in every app process."""
    _run(settings_given(ctx.obj).database_url, lambda db: service.revoke_token(db, token_id, by=None))
    typer.echo(f"token {token_id} revoked")


@agents_app.command("list")
def list_agents(ctx: typer.Context) -> None:
    """Agents and their tokens (prefixes only)."""

    async def work(db: AsyncSession) -> list[tuple[Agent, list[ApiToken]]]:
        return [(a, await service.list_tokens(db, a.id)) for a in await service.list_agents(db)]

    for agent, tokens in _run(settings_given(ctx.obj).database_url, work):
        typer.echo(f"{agent.id}\t{agent.role.value}\t{agent.email}\t{agent.name}")
        for t in tokens:
            state = "revoked" if t.revoked_at else "live"
            typer.echo(f"\ttoken {t.id}\t{t.display_prefix}...\t{state}")
