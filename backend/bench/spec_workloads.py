"""What a run's spec asks its worker to send: the workloads of its scenarios, or its capacity plan."""

from pathlib import Path

from backend.bench import capacity
from backend.bench.questions import eval_questions
from backend.bench.workloads import KNOWLEDGE_BOT, Workload, build, knowledge, knowledge_retrieval


def workloads_of(spec: dict, prompts_dir: Path) -> list[Workload]:
    found = []
    for scenario in spec["scenarios"]:
        if scenario == "knowledge":
            found += knowledge_workloads(spec, prompts_dir)
            continue
        if scenario == "capacity":  # not a set of workloads: `capacity.measure` drives it
            continue
        found += build(
            scenario,
            requests=spec["requests"],
            conversations=spec["conversations"],
            turns=spec["turns"],
            rates=spec["rates"],
            window_s=spec["window_s"],
        )
    return found


def knowledge_workloads(spec: dict, prompts_dir: Path) -> list[Workload]:
    """The help-center bot's questions: single-stream and at each concurrency, or (the retrieval
    path) multi-turn conversations."""
    options = spec["knowledge"]
    questions = eval_questions(prompts_dir / KNOWLEDGE_BOT)
    if spec.get("knowledge_path") == "retrieval":
        return [
            knowledge_retrieval(questions, options["retrieval_conversations"], options["retrieval_turns"])
        ]
    on = spec["caching"]
    return knowledge(
        questions,
        single=options["questions"] if on else options["off_questions"],
        concurrency=options["concurrency"] if on else options["off_concurrency"],
        rounds=options["rounds"] if on else 1,
        first_concurrent=options["questions"],
        offsets_of=options["concurrency"],
        offsets_rounds=options["rounds"],
    )


def capacity_plan(spec: dict) -> capacity.CapacityPlan:
    options = spec["capacity"]
    return capacity.CapacityPlan(
        levels=tuple(options["conversations"]),
        returning=options["returning"],
        turns=options["turns"],
        at_once=options["at_once"],
        message_chars=options["message_chars"],
    )
