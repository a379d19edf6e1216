"""A tiny random Qwen2 with the default model's real tokenizer and chat template.

Loads in seconds instead of a minute, so tests run the real engine, the real chat
template and the real special tokens cheaply. Its replies are gibberish, by design.
"""

import json
import shutil
from pathlib import Path

TINY_CONFIG = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "head_dim": 64,  # vLLM's CPU attention refuses 16; 64 works
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
}
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "generation_config.json",
)
MARKER = "prefixdesk-tiny.json"


def build_tiny_model(source_dir: Path, target: Path, *, seed: int = 0) -> Path:
    """Write the tiny checkpoint to `target` (once; reused when already there)."""
    recipe = {"config": TINY_CONFIG, "seed": seed, "source": str(source_dir)}
    if (target / MARKER).exists() and json.loads((target / MARKER).read_text()) == recipe:
        return target
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    source_config = json.loads((source_dir / "config.json").read_text())
    config = Qwen2Config(
        **TINY_CONFIG,
        vocab_size=source_config["vocab_size"],
        bos_token_id=source_config.get("bos_token_id"),
        eos_token_id=source_config.get("eos_token_id"),
        torch_dtype="float32",
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    for name in TOKENIZER_FILES:
        if (source_dir / name).exists():
            shutil.copy(source_dir / name, staging / name)
    (staging / MARKER).write_text(json.dumps(recipe))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target
