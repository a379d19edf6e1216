"""The context window follows the model, and the KV cache sizing logged at start-up."""

import json

from backend.engine.kv_sizing import (
    FALLBACK_CONTEXT_WINDOW,
    context_window,
    knowledge_budget,
    kv_bytes_per_token,
    kv_sizing,
)

QWEN25_05B = {
    "hidden_size": 896,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "num_hidden_layers": 24,
    "max_position_embeddings": 32768,
    "torch_dtype": "bfloat16",
}


def test_the_context_window_is_the_models_unless_configured(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN25_05B))
    assert context_window(tmp_path, None) == 32768
    assert context_window(tmp_path, 4096) == 4096
    assert context_window(tmp_path / "missing", None) == FALLBACK_CONTEXT_WINDOW


def test_a_help_center_leaves_a_conversation_its_room_or_half_a_small_window():
    assert knowledge_budget(32768, 4096) == 28672
    assert knowledge_budget(2048, 4096) == 1024


def test_kv_bytes_per_token_counts_keys_and_values_of_every_layer():
    # 2 (K and V) x 24 layers x 2 KV heads x 64 dims x 2 bytes (bfloat16) = 12 KiB.
    assert kv_bytes_per_token(QWEN25_05B, "auto") == 12288
    assert kv_bytes_per_token(QWEN25_05B, "float32") == 24576


def test_the_sizing_says_how_many_conversations_fit_beside_the_warm_prefixes(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN25_05B))
    sizing = kv_sizing(
        tmp_path, kv_cache_gib=1, block_size=32, dtype="auto", fixed_tokens=17_000, conversation_tokens=2048
    )
    assert sizing.cache_tokens == (1 << 30) // 12288 // 32 * 32  # 87,360 tokens
    assert sizing.conversations == (sizing.cache_tokens - 17_000) // 2048
    assert round(sizing.needed_gib(1000), 1) == round((17_000 + 2_048_000) * 12288 / (1 << 30), 1)
    assert "room for about 34 live conversations" in sizing.describe(3)
