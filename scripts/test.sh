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
exec .venv/bin/python -m pytest "$@"
