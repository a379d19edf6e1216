"""The plugin that spreads a request's sampling settings over its draft tokens on vLLM's CPU
build (backend/engine/sampled_drafts.py); the engine test is in test_speculative.py."""

from importlib.metadata import entry_points

import torch

from backend.engine.sampled_drafts import expand_per_token, register


def test_the_plugin_is_what_vllm_loads_and_replaces_the_cpu_stand_in():
    plugins = {entry.name: entry.value for entry in entry_points(group="vllm.general_plugins")}
    assert plugins["prefixdesk_sampled_drafts"] == "backend.engine.sampled_drafts:register"
    from vllm.utils import cpu_triton_utils

    register()
    register()  # vLLM loads plugins once per process, and may load them in several
    assert cpu_triton_utils._expand_kernel_impl is expand_per_token


def test_each_request_s_value_is_written_for_each_of_its_tokens_at_the_caller_s_dtype():
    ends = torch.tensor([3, 3, 5, 8], dtype=torch.int32)  # the second request drafted nothing
    temperature = torch.tensor([0.0, 0.7, 0.8, 1.3], dtype=torch.float32)
    out = torch.full((8,), float("nan"))
    expand_per_token(out, temperature, ends, 0, 1)  # greedy (0) is written as 1
    assert out.tolist() == torch.tensor([1, 1, 1, 0.8, 0.8, 1.3, 1.3, 1.3]).tolist()
    top_k = torch.tensor([5, 7, 9, 11], dtype=torch.int32)
    out_k = torch.full((8,), -1, dtype=torch.int32)
    expand_per_token(out_k, top_k, ends, 0, 0)
    assert out_k.tolist() == [5, 5, 5, 9, 9, 11, 11, 11] and out_k.dtype == torch.int32


def test_vllm_s_rejection_sampler_gets_the_temperatures_through_the_platform_s_overrides():
    from vllm.platforms import current_platform
    from vllm.v1.sample import rejection_sampler

    register()
    current_platform.register_triton_kernel_overrides()  # as each worker does, after the plugins
    temperature = torch.tensor([0.0, 0.8], dtype=torch.float32)
    spread = rejection_sampler.expand_batch_to_tokens(
        temperature,
        torch.tensor([2, 5], dtype=torch.int32),
        5,
        replace_from=rejection_sampler.GREEDY_TEMPERATURE,
        replace_to=1,
    )
    assert spread.tolist() == torch.tensor([1, 1, 0.8, 0.8, 0.8]).tolist()
