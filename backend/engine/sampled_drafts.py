"""A vLLM plugin: with speculative decoding on, a request sampled at a temperature above 0 no
longer garbles its own tokens and those of the requests in its steps, on vLLM's CPU build.

To check drafts, vLLM's rejection sampler spreads each request's temperature, top-k and top-p
over its draft tokens (`expand_batch_to_tokens`). Without Triton the CPU build runs a C++
stand-in for that kernel (`vllm/utils/cpu_triton_utils.py`), which converts the output buffer
to int64 first: it fills a copy, and the buffer, float32 temperatures and int32 top-k, is left
as allocated. Every step that drafts beside a sampled request then divides the logits by
uninitialised memory, greedy requests' included ("The warranty on jackets! It covers...").
Reported upstream as vllm-project/vllm#55005 (fix proposed in #55006).

Here the stand-in is replaced, before the CPU platform registers it, by the kernel's own
semantics at the caller's dtype. The CUDA build runs the Triton kernel and is left as it is.
"""

import logging
from typing import Any

logger = logging.getLogger(__name__)


def register() -> None:
    try:
        from vllm.utils import cpu_triton_utils
    except ImportError:  # not the CPU build
        return
    if getattr(cpu_triton_utils, "expands_at_caller_dtype", False):  # loaded twice in one process
        return
    cpu_triton_utils._expand_kernel_impl = expand_per_token
    cpu_triton_utils.expands_at_caller_dtype = True
    logger.debug("speculative decoding beside sampled requests expands their settings per token")


def expand_per_token(
    output: Any,
    input_val: Any,
    cu_num_tokens: Any,
    replace_from: Any,
    replace_to: Any,
    MAX_NUM_TOKENS: Any = None,
) -> None:
    """`output[t]` is request r's value for each of its tokens t (r's tokens end at
    `cu_num_tokens[r]`), `replace_from` written as `replace_to`: vLLM's `expand_kernel`."""
    import torch

    ends = cu_num_tokens.to(torch.int64)
    counts = torch.diff(ends, prepend=ends.new_zeros(1))
    values = torch.where(input_val == replace_from, torch.full_like(input_val, replace_to), input_val)
    expanded = torch.repeat_interleave(values, counts)
    output[: expanded.numel()].copy_(expanded)
