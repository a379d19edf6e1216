"""`prompts reload --eval`: the changed prompts' eval against the running app's, bot by bot.

The two evals are `prefixdesk eval` runs of their own (tests/evaluation covers the command);
here they are replaced by their results, to check what is refused and what is let through.
"""

import json
import subprocess
from pathlib import Path

from backend.authoring import cli


def evals_giving(monkeypatch, running: dict[str, int], changed: dict[str, int]) -> list[list[str]]:
    """`prefixdesk eval` runs that report these passed counts (of 30 cases); the commands run."""
    commands: list[list[str]] = []

    def run(command, check):
        commands.append(command)
        passed = running if "--url" in command else changed
        output = Path(command[command.index("--output") + 1])
        bots = {slug: {"cases": 30, "passed": n} for slug, n in passed.items()}
        output.write_text(json.dumps({"bots": bots}))
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(cli.subprocess, "run", run)
    return commands


def test_a_bot_that_passes_fewer_cases_is_refused(monkeypatch):
    commands = evals_giving(
        monkeypatch, {"shop-en": 25, "appliance-zh": 29}, {"shop-en": 24, "appliance-zh": 30}
    )
    assert cli.worse_than_running("http://app:8000", None) == ["  shop-en: 24/30 passed, running version 25"]
    assert commands[0][-2:] == ["--url", "http://app:8000"] and "--url" not in commands[1]


def test_equal_or_better_goes_through_and_bots_can_be_chosen(monkeypatch):
    commands = evals_giving(monkeypatch, {"shop-en": 25}, {"shop-en": 25})
    assert cli.worse_than_running("http://app:8000", ["shop-en"]) == []
    assert all(command[command.index("--bot") + 1] == "shop-en" for command in commands)


def test_an_eval_that_fails_refuses_the_reload(monkeypatch):
    monkeypatch.setattr(cli.subprocess, "run", lambda command, check: subprocess.CompletedProcess(command, 2))
    refused = cli.worse_than_running("http://app:8000", None)
    assert len(refused) == 1 and "failed" in refused[0]
