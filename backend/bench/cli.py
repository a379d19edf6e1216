"""`prefixdesk bench`: its options, read into `BenchOptions`, and the run."""

import os
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from backend.bench.options import BenchOptions, CapacityOptions, KnowledgeOptions, LoadShape, Selection
from backend.bench.processes import stop_on_sigterm
from backend.config import Settings, settings_given

# One alias per option: the command's signature stays one line per option.
ScenarioOption = Annotated[
    list[str] | None,
    typer.Option(
        help="article, random, multiturn, support, speculative, knowledge, capacity "
        "(repeat to pick several; default all); routing and restart (each alone: ways of their own)."
    ),
]
WayOption = Annotated[
    list[str] | None,
    typer.Option(
        help="app, engine, peer (repeat to pick several; default all); for routing: "
        "router_consistent_hash, router_cache_aware, router_kv_aware, router_round_robin; "
        "for restart: off, on (the KV tier)."
    ),
]
RequestsOption = Annotated[int, typer.Option(help="Requests of `article` and `random`.")]
ConversationsOption = Annotated[int, typer.Option(help="Conversations of `multiturn`.")]
TurnsOption = Annotated[int, typer.Option(help="Turns per `multiturn` conversation.")]
RatesOption = Annotated[str, typer.Option(help="`support` arrival rates (req/s), comma-separated.")]
WindowOption = Annotated[float, typer.Option(help="Seconds of arrivals per `support` rate.")]
MaxTokensOption = Annotated[int, typer.Option(help="Reply length cap, the same for every way.")]
SpeculativeMaxTokensOption = Annotated[
    int, typer.Option(help="Reply length cap of `speculative` (speculative decoding off vs on).")
]
KnowledgeQuestionsOption = Annotated[
    int, typer.Option(help="`knowledge`: questions asked one at a time, caching on.")
]
KnowledgeConcurrencyOption = Annotated[
    str, typer.Option(help="`knowledge`: questions at once, comma-separated levels (caching on).")
]
KnowledgeRoundsOption = Annotated[
    int, typer.Option(help="`knowledge`: rounds at each level (level x rounds questions; caching on).")
]
KnowledgeOffQuestionsOption = Annotated[
    int, typer.Option(help="`knowledge`, caching off (a whole help-center prefill each): one at a time.")
]
KnowledgeOffConcurrencyOption = Annotated[
    str, typer.Option(help="`knowledge`, caching off: levels, one round each ('' for none).")
]
RetrievalConversationsOption = Annotated[
    int, typer.Option(help="`knowledge` on the retrieval path: conversations (0: not run).")
]
RetrievalTurnsOption = Annotated[int, typer.Option(help="`knowledge` on the retrieval path: turns each.")]
CapacityConversationsOption = Annotated[
    str, typer.Option(help="`capacity`: live conversations at each checkpoint, growing, comma-separated.")
]
CapacityReturningOption = Annotated[
    int, typer.Option(help="`capacity`: customers returning at each checkpoint, one at a time.")
]
CapacityTurnsOption = Annotated[int, typer.Option(help="`capacity`: long messages per opened conversation.")]
CapacityAtOnceOption = Annotated[int, typer.Option(help="`capacity`: conversations opened at the same time.")]
CapacityMessageCharsOption = Annotated[
    int, typer.Option(help="`capacity`: length of each opening message (the widget takes 4,000).")
]
CapacityKvGibOption = Annotated[
    float, typer.Option(help="`capacity`: KV cache size (the CPU build takes whole GiB, at least 1).")
]
CapacityMaxTokensOption = Annotated[int, typer.Option(help="`capacity`: reply length cap.")]
CapacityTierOption = Annotated[
    str, typer.Option(help="`capacity`: the KV tier off, on (a run each, comma-separated).")
]
ModelOption = Annotated[Path | None, typer.Option(help="A model directory instead of PREFIXDESK_MODEL.")]
OutOption = Annotated[Path, typer.Option(help="JSON results.")]
PlotsDirOption = Annotated[Path | None, typer.Option(help="Where the PNGs go (default: beside --out).")]
CachingOption = Annotated[list[str] | None, typer.Option(help="on, off (repeat for both; default both).")]
GroupByWayOption = Annotated[
    bool, typer.Option(help="One engine per way and mode for all scenarios (quick checks only).")
]


def bench_command(
    ctx: typer.Context,
    scenario: ScenarioOption = None,
    way: WayOption = None,
    requests: RequestsOption = 100,
    conversations: ConversationsOption = 8,
    turns: TurnsOption = 4,
    rates: RatesOption = "0.5,1,2",
    window: WindowOption = 30.0,
    max_tokens: MaxTokensOption = 24,
    speculative_max_tokens: SpeculativeMaxTokensOption = 128,
    knowledge_questions: KnowledgeQuestionsOption = 8,
    knowledge_concurrency: KnowledgeConcurrencyOption = "2,4",
    knowledge_rounds: KnowledgeRoundsOption = 2,
    knowledge_off_questions: KnowledgeOffQuestionsOption = 3,
    knowledge_off_concurrency: KnowledgeOffConcurrencyOption = "2",
    retrieval_conversations: RetrievalConversationsOption = 4,
    retrieval_turns: RetrievalTurnsOption = 6,
    capacity_conversations: CapacityConversationsOption = "16,24,28,32,40,48,56,64",
    capacity_returning: CapacityReturningOption = 2,
    capacity_turns: CapacityTurnsOption = 2,
    capacity_at_once: CapacityAtOnceOption = 8,
    capacity_message_chars: CapacityMessageCharsOption = 3600,
    capacity_kv_gib: CapacityKvGibOption = 1.0,
    capacity_max_tokens: CapacityMaxTokensOption = 48,
    capacity_tier: CapacityTierOption = "off,on",
    model: ModelOption = None,
    out: OutOption = Path("bench/results/latest.json"),
    plots_dir: PlotsDirOption = None,
    caching: CachingOption = None,
    group_by_way: GroupByWayOption = False,
) -> None:
    """The article's scenarios and the product's (docs/benchmarks.md), each in a process of its
    own; `routing` and `restart` alone. Results of scenarios not run are kept in --out."""
    settings = settings_given(ctx.obj)
    load = LoadShape(requests, conversations, turns, _rates(rates), window, max_tokens)
    if scenario and {"routing", "restart"} & set(scenario):
        return _run_alone(settings, model, scenario, way, load, out)
    selection = _selection(scenario, way, caching, group_by_way)
    knowledge = KnowledgeOptions(
        questions=knowledge_questions,
        concurrency=_counts(knowledge_concurrency),
        rounds=knowledge_rounds,
        off_questions=knowledge_off_questions,
        off_concurrency=_counts(knowledge_off_concurrency),
        retrieval_conversations=retrieval_conversations,
        retrieval_turns=retrieval_turns,
    )
    capacity = CapacityOptions(
        conversations=_counts(capacity_conversations),
        returning=capacity_returning,
        turns=capacity_turns,
        at_once=capacity_at_once,
        message_chars=capacity_message_chars,
        kv_gib=capacity_kv_gib,
        max_tokens=capacity_max_tokens,
        tiers=_tiers(capacity_tier),
    )
    options = BenchOptions(selection, load, speculative_max_tokens, knowledge, capacity, out, plots_dir)
    _run(options, settings, model)


def _selection(
    scenario: list[str] | None, way: list[str] | None, caching: list[str] | None, group_by_way: bool
) -> Selection:
    from backend.bench.suite import SCENARIO_WAYS, WAYS  # loaded when the command runs, not on every start

    scenarios = scenario or list(SCENARIO_WAYS)
    ways = way or list(WAYS)
    modes = caching or ["off", "on"]
    unknown = [s for s in scenarios if s not in SCENARIO_WAYS] + [w for w in ways if w not in WAYS]
    unknown += [m for m in modes if m not in ("on", "off")]
    if unknown:
        _fail(f"unknown scenario, way or caching mode: {', '.join(unknown)}")
    caching_on = tuple(mode == "on" for mode in ("off", "on") if mode in modes)
    return Selection(tuple(scenarios), tuple(ways), caching_on, group_by_way)


def _run(options: BenchOptions, settings: Settings, model: Path | None) -> None:
    from backend.bench.suite import run_bench

    stop_on_sigterm()  # stopped, it stops the runs and the servers they started
    try:
        run_bench(options, _with_model(settings, model), echo=typer.echo)
    except ValueError as error:  # a bad option found before any run
        _fail(str(error))


def _run_alone(
    settings: Settings,
    model: Path | None,
    scenarios: list[str],
    ways: list[str] | None,
    load: LoadShape,
    out: Path,
) -> None:
    stop_on_sigterm()  # stopped, it stops the replicas, routers and apps it started
    if "restart" in scenarios:
        return _run_restart(settings, model, scenarios, ways, out)
    return _run_routing(settings, model, scenarios, ways, load, out)


def _run_routing(
    settings: Settings,
    model: Path | None,
    scenarios: list[str],
    ways: list[str] | None,
    load: LoadShape,
    out: Path,
) -> None:
    """Two local replicas behind vLLM's router, the same conversations through each of its
    policies; `routing` in --out."""
    import asyncio
    from datetime import UTC, datetime

    from backend.bench import routing
    from backend.bench.results_file import write_section

    if scenarios != ["routing"]:
        _fail("run --scenario routing on its own: it starts replicas and routers of its own")
    update = {"max_reply_tokens": load.max_tokens, **({"model": model.resolve()} if model else {})}
    started_at = datetime.now(UTC)
    try:
        results = asyncio.run(
            routing.run(
                settings.model_copy(update=update),
                ways or list(routing.WAYS),
                replicas=2,
                conversations=load.conversations,
                turns=load.turns,
            )
        )
    except ValueError as error:  # an unknown way, found before anything starts
        _fail(str(error))
    write_section("routing", results, started_at, out, settings)
    typer.echo(routing.table(results))
    typer.echo(f"written: {out} (routing)")
    try:
        from backend.bench.routing_plot import routing as plot

        typer.echo(f"written: {plot(results, out.parent / 'routing.png')}")
    except ImportError:  # matplotlib comes with the `bench` extra
        typer.echo("no plot: pip install -e '.[bench]' for matplotlib")


def _rates(text: str) -> tuple[float, ...]:
    return tuple(float(r) for r in text.split(",") if r.strip())


def _counts(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


def _run_restart(
    settings: Settings, model: Path | None, scenarios: list[str], ways: list[str] | None, out: Path
) -> None:
    """The app restarted with the KV tier off and on; `restart` in --out."""
    import asyncio
    from datetime import UTC, datetime

    from backend.bench import restart
    from backend.bench.results_file import write_section

    if scenarios != ["restart"]:
        _fail("run --scenario restart on its own: it starts the app itself, twice per way")
    settings = _with_model(settings, model)
    started_at = datetime.now(UTC)
    try:
        results = asyncio.run(restart.run(settings, ways or list(restart.WAYS)))
    except ValueError as error:  # an unknown way, found before anything starts
        _fail(str(error))
    write_section("restart", results, started_at, out, settings)
    typer.echo(restart.table(results))


def _with_model(settings: Settings, model: Path | None) -> Settings:
    """The settings with --model, which every process the run starts reads too."""
    if model is None:
        return settings
    os.environ["PREFIXDESK_MODEL"] = str(model.resolve())
    return settings.model_copy(update={"model": model.resolve()})


def _tiers(text: str) -> tuple[str, ...]:
    tiers = tuple(part.strip() for part in text.split(",") if part.strip())
    if not tiers or any(tier not in ("off", "on") for tier in tiers):
        _fail(f"--capacity-tier takes off, on or both (comma-separated), not {text!r}")
    return tiers


def _fail(message: str) -> NoReturn:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)
