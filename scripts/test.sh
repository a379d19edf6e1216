#!/usr/bin/env bash
# Set everything up and run the tests against real Postgres, Redis and vLLM (CPU build).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
scripts/services.sh
.venv/bin/ruff check backend tests migrations
.venv/bin/lint-imports            # the layers of docs/architecture.md
.venv/bin/mypy                    # strict, as configured in pyproject.toml
.venv/bin/prefixdesk prompts check
# Answers: every bot's eval cases on the default model; a bot with one wrong answer more than
# bench/results/eval.json records, or right ones fewer beyond the margin (the CPU's float
# rounding), fails.
# A bot whose fixed prefix is longer than 4,096 tokens is left to the benchmark's eval
# (docs/quality.md): tallybook-en's help center alone takes over ten minutes to prefill on
# two AVX2 cores, and its 45 cases twenty more.
.venv/bin/prefixdesk eval --baseline bench/results/eval.json --margin 2 --max-prefix-tokens 4096 \
    --output var/eval-latest.json
exec .venv/bin/python -m pytest "$@"
