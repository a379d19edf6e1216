"""The model's tokenizer, loaded once per process and shared with vLLM.

vLLM loads its tokenizer through a cache of its own (`cached_get_tokenizer`), in the app's
process (for its renderer) and again in the engine core (for its structured-output manager):
each a few seconds on two cores, on the way to ready. Loaded through that cache with the
arguments vLLM's `cached_tokenizer_from_config` passes, the app's tokenizer is the one vLLM
then finds; and the fork server the engine core comes from (`preloaded_processes`) loads it
once for every core forked from it.
"""

import logging
import os
from pathlib import Path
from typing import Any

# Tells the engine core's fork server which model's tokenizer to preload (`core_tokenizer`).
PRELOAD_ENV = "PREFIXDESK_CORE_TOKENIZER"

logger = logging.getLogger(__name__)


def load_tokenizer(model_dir: Path) -> Any:
    """The model's tokenizer, from vLLM's cache: loaded on the first call in this process."""
    from vllm.tokenizers import cached_get_tokenizer

    # As `cached_tokenizer_from_config` calls it for the engine's model config (the engine
    # options name the model directory as the tokenizer): the cache's key is these arguments,
    # in this order.
    return cached_get_tokenizer(
        str(model_dir), runner_type="generate", tokenizer_mode="auto", revision=None, trust_remote_code=False
    )


def preload_for_core() -> None:
    """In the engine core's fork server: load the tokenizer `PRELOAD_ENV` names, if any.
    Failing here costs only the time it would have saved: the core loads its own."""
    if not (model_dir := os.environ.get(PRELOAD_ENV)):
        return
    try:
        load_tokenizer(Path(model_dir))
    except Exception:  # noqa: BLE001  the core loads it itself then
        logger.warning("could not preload the tokenizer of %s for the engine core", model_dir, exc_info=True)
