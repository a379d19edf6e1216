#!/usr/bin/env bash
# Set everything up and serve the app on its defaults: the default model, a SQLite file
# (unless DATABASE_URL is set) and an in-process session store (unless REDIS_URL is set).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/prefixdesk serve "$@"
