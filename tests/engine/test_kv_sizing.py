"""The KV cache sizing logged at start-up: bytes per token as vLLM stores them."""

import json
from pathlib import Path

import pytest

from backend.config import Settings
from backend.engine import vllm_options
from backend.engine.kv_sizing import (
    FALLBACK_CONTEXT_WINDOW,
    context_window,
    knowledge_budget,
    kv_bytes_per_token,
    kv_sizing,
)

# Qwen2.5 0.5B, the default model: 24 layers, 2 key/value heads of 64 dimensions, float32 weights.
QWEN_05B = {
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "hidden_size": 896,
    "dtype": "float32",
}


def test_a_float32_checkpoint_is_stored_in_16_bits_under_auto():
    # vLLM downcasts a float32 checkpoint to bfloat16 under dtype "auto", its KV cache too.
    assert kv_bytes_per_token(QWEN_05B, "auto") == 2 * 24 * 2 * 64 * 2 == 12288
    assert kv_bytes_per_token(QWEN_05B, "float32") == 24576
    assert kv_bytes_per_token({**QWEN_05B, "dtype": "bfloat16"}, "auto") == 12288


def test_a_gib_holds_what_vllm_counts(tmp_path: Path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN_05B))
    sizing = kv_sizing(
        tmp_path, kv_cache_gib=1, block_size=32, dtype="auto", fixed_tokens=2000, conversation_tokens=2048
    )
    assert sizing.cache_tokens == 87360  # vLLM: "CPU KV cache size: 87,360 tokens" for 1 GiB
    assert sizing.conversations == (87360 - 2000) // 2048
    assert "87,360 tokens at 12.0 KiB each" in sizing.describe(1)


@pytest.mark.parametrize(
    ("configured", "cpu", "expected"), [(0.5, True, 1.0), (2.7, True, 2.0), (0.5, False, 0.5)]
)
def test_the_cpu_build_gets_whole_gib(monkeypatch, configured, cpu, expected):
    monkeypatch.setattr(vllm_options, "_cpu_build", lambda: cpu)
    settings = Settings(kv_cache_gib=configured)
    assert vllm_options.kv_cache_gib(settings) == expected
    assert vllm_options.engine_environment(settings)["VLLM_CPU_KVCACHE_SPACE"] == str(max(1, int(configured)))


def test_the_context_window_is_the_models_unless_configured(tmp_path: Path):
    (tmp_path / "config.json").write_text(json.dumps({**QWEN_05B, "max_position_embeddings": 32768}))
    assert context_window(tmp_path, None) == 32768
    assert context_window(tmp_path, 4096) == 4096
    assert context_window(tmp_path / "missing", None) == FALLBACK_CONTEXT_WINDOW


def test_a_help_center_leaves_a_conversation_its_room_or_half_a_small_window():
    assert knowledge_budget(32768, 4096) == 28672
    assert knowledge_budget(2048, 4096) == 1024
