"""A second tier for prefix KV (PREFIXDESK_KV_TIER=disk): vLLM's offloading connector, its
file-system tier, and on the CPU build the host-copy spec (backend/engine/kv_tier.py).

The options map is checked on its own; then tiny-model engines, one at a time: one with the
tier writes a conversation's prefix KV to disk, a second, started afresh on the same
directory, finds it there instead of computing it, and both answer as an engine without it;
a third, once every file has another block's bytes, uses none of them and answers the same.
"""

import importlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import ValidationError

from backend.config import Settings
from backend.engine.interface import GenerationResult, LabelRead
from backend.engine.vllm_engine import VllmEngine
from backend.engine.vllm_options import cli_flags, engine_dtype, engine_options, kv_tier_dir
from tests.engine.processes import engine_worker
from tests.support import eventually

SALT = "kv-tier-test"
SHM = Path("/dev/shm")
# Two prompts of several blocks that share none (the first block differs), and end mid-block.
POLICY = "Customers may return any unused item within 45 days of delivery for a full refund. " * 8
GLOSSARY = "A parcel is late once the carrier's promised date has passed without a scan. " * 8


def fake_model(directory: Path, *, layers: int = 2, weights: bytes = b"0" * 64) -> Path:
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps({"num_hidden_layers": layers}))
    (directory / "model.safetensors").write_bytes(weights)
    return directory


def connector(settings: Settings, model_dir: Path) -> dict:
    return engine_options(settings, model_dir)["kv_transfer_config"]


def test_the_tier_is_off_unless_asked_and_refuses_bad_values(tmp_path):
    assert Settings().kv_tier == "off"
    assert connector(Settings(), tmp_path) is None
    assert "--kv-transfer-config" not in cli_flags(engine_options(Settings(), tmp_path))
    for bad, named in (
        ({"kv_tier": "ssd"}, "kv_tier"),
        ({"kv_tier_gib": 0}, "kv_tier_gib"),
        ({"kv_tier": "disk", "enable_prefix_caching": False}, "PREFIXDESK_ENABLE_PREFIX_CACHING"),
        ({"kv_tier_path": tmp_path / "a-file"}, "PREFIXDESK_KV_TIER_PATH"),
    ):
        (tmp_path / "a-file").touch()
        with pytest.raises(ValidationError, match=named):
            Settings(**bad)
    default = Settings(kv_tier="disk")
    assert kv_tier_dir(default, tmp_path).parent == default.cache_dir.resolve() / "kv-tier"


def test_the_cpu_tiers_region_leaves_its_pages_to_be_faulted_in_on_use():
    from vllm.v1.kv_offload.cpu.shared_offload_region import SharedOffloadRegion

    from backend.engine.kv_tier import pages_faulted_on_use

    def region(name: str) -> SharedOffloadRegion:
        chunk = 1 << 20
        engine_id = f"prefixdesk-test-{name}-{os.getpid()}"
        return SharedOffloadRegion(engine_id, 16, None, kv_bytes_per_chunk=chunk, cpu_page_size=chunk)

    with pages_faulted_on_use():
        lazy = region("lazy")
    eager = region("eager")  # as vLLM makes it
    try:
        assert os.stat(lazy.mmap_path).st_blocks == 0  # no page of shared memory taken yet
        assert os.stat(eager.mmap_path).st_blocks * 512 == 16 << 20
    finally:
        lazy.cleanup()
        eager.cleanup()


def test_the_connector_and_its_directory_keyed_by_what_makes_kv_valid(tmp_path):
    model = fake_model(tmp_path / "models" / "qwen")
    settings = Settings(kv_tier="disk", kv_tier_path=tmp_path / "tier", kv_tier_gib=0.25)
    config = connector(settings, model)
    assert config["kv_connector"] == "OffloadingConnector" and config["kv_role"] == "kv_both"
    extra = config["kv_connector_extra_config"]
    assert extra["cpu_bytes_to_use"] == 1 << 28
    [fs_tier] = extra["secondary_tiers"]
    root = Path(fs_tier["root_dir"])
    assert root == kv_tier_dir(settings, model)
    # vLLM's fs tier, checked: the tier named is vLLM's, importable where vLLM looks for it.
    from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory
    from vllm.v1.kv_offload.tiering.fs.manager import FileSystemTierManager

    assert issubclass(SecondaryTierFactory.get_tier_class(fs_tier), FileSystemTierManager)
    assert root.parent == (tmp_path / "tier").resolve() and root.name.startswith("qwen-")
    # The spec named is importable where vLLM looks for it (the host-copy spec on the CPU build).
    spec = getattr(
        importlib.import_module(extra.get("spec_module_path", "vllm.v1.kv_offload.tiering.spec")),
        extra["spec_name"],
    )
    from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec

    assert issubclass(spec, TieringOffloadingSpec)
    # Replicas get the same connector, spelt as JSON.
    flags = cli_flags(engine_options(settings, model))
    assert json.loads(flags[flags.index("--kv-transfer-config") + 1]) == config

    # Anything that changes what a block's KV is gets a directory of its own; the rest does not.
    assert kv_tier_dir(settings.model_copy(update={"kv_tier_gib": 2}), model) == root
    assert kv_tier_dir(settings, fake_model(tmp_path / "copy" / "qwen")) == root  # the same files elsewhere
    # Not the dtype the engine runs: "auto" is float32 on a CPU without native bfloat16.
    other_dtype = "bfloat16" if engine_dtype(settings.dtype) == "float32" else "float32"
    others = {
        kv_tier_dir(settings.model_copy(update={"block_size": 64}), model),
        kv_tier_dir(settings.model_copy(update={"dtype": other_dtype}), model),
        kv_tier_dir(settings, fake_model(tmp_path / "other", layers=3)),  # another model
        kv_tier_dir(settings, fake_model(tmp_path / "more" / "qwen", weights=b"0" * 65)),  # new weights
        kv_tier_dir(settings, fake_model(tmp_path / "other-qwen", layers=2)),  # another name
    }
    assert len(others) == 5 and root not in others


# -- real engines: write in one, find in the next ---------------------------------------------------


@dataclass
class Run:
    reply: GenerationResult
    labels: LabelRead
    prefix_cache: tuple[int, int]  # tokens looked up in the engine's own prefix cache, found there
    offload_regions_named: set[str]  # the CPU tier's regions in /dev/shm, while it ran or after
    model_cpus: list[int]  # the CPUs the engine's worker runs the model on


def offload_regions() -> set[str]:
    return {path.name for path in SHM.glob("vllm_offload_*.mmap")}


async def run_engine(
    settings: Settings, prompts: tuple[list[int], list[int]], labels: Sequence[int], tier_blocks: int = 0
) -> Run:
    """One engine: a label read of the first prompt, then a short greedy reply to the second;
    with `tier_blocks`, waits until the tier holds that many block files before it shuts down."""
    regions_before = offload_regions()
    engine = await VllmEngine.start(settings, settings.model)
    try:
        named = offload_regions() - regions_before
        model_cpus = sorted(engine_worker(engine).cpu_affinity())
        label_read = await engine.read_labels(prompts[0], labels, cache_salt=SALT)
        async for item in engine.stream(prompts[1], max_tokens=4, cache_salt=SALT):
            reply = item
        assert isinstance(reply, GenerationResult)
        if tier_blocks:
            files = kv_tier_dir(settings, settings.model)
            await eventually(
                lambda: len(list(files.rglob("*.bin"))) >= tier_blocks,
                timeout_s=60,
                what=f"{tier_blocks} blocks written to the tier",
            )
        own_cache = (engine.stats.prefix_cache_queries, engine.stats.prefix_cache_hits)
        run = Run(reply, label_read, own_cache, named, model_cpus)
    finally:
        engine.shutdown()
    run.offload_regions_named |= offload_regions() - regions_before
    return run


@pytest.fixture(scope="module")
def prompts(tiny_settings: Settings) -> tuple[list[int], list[int]]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_settings.model)
    first = tokenizer.encode(f"<|im_start|>system\n{GLOSSARY}<|im_end|>\n<|im_start|>user\nLate?<|im_end|>\n")
    second = tokenizer.encode(f"<|im_start|>user\n{POLICY}<|im_end|>\n<|im_start|>assistant\n")
    assert first[:32] != second[:32] and all(len(p) > 3 * 32 and len(p) % 32 for p in (first, second))
    return first, second


@pytest.fixture(scope="module")
async def runs(tiny_settings: Settings, prompts, tmp_path_factory) -> dict[str, Run]:
    """The same two requests on four engines, one after the other: without the tier; with
    it, on an empty directory (the writer); with it again, on what the writer left (the reader);
    and again once every file the writer left has another block's bytes (damaged)."""
    plain = tiny_settings.model_copy(update={"speculative_method": "off"})
    tiered = plain.model_copy(
        update={"kv_tier": "disk", "kv_tier_path": tmp_path_factory.mktemp("kv-tier"), "kv_tier_gib": 1 / 16}
    )
    labels = [prompts[0][-1], prompts[0][-2], prompts[1][-1]]  # the tiny model likes repeating itself
    blocks = sum(len(prompt) // tiny_settings.block_size for prompt in prompts)
    runs = {
        "off": await run_engine(plain, prompts, labels),
        "writer": await run_engine(tiered, prompts, labels, tier_blocks=blocks),
        "reader": await run_engine(tiered, prompts, labels),
    }
    swap_every_file(kv_tier_dir(tiered, tiered.model))
    runs["damaged"] = await run_engine(tiered, prompts, labels, tier_blocks=blocks)
    return runs


def swap_every_file(directory: Path) -> None:
    """Each block file overwritten with the next one's bytes: every size right, every block wrong."""
    files = sorted(directory.rglob("*.bin"))
    contents = [path.read_bytes() for path in files]
    assert len(files) > 1 and len({len(content) for content in contents}) == 1
    for path, content in zip(files, contents[1:] + contents[:1], strict=True):
        path.write_bytes(content)


async def test_a_new_engine_finds_the_prefix_in_the_tier(runs, prompts, tiny_settings):
    full_blocks = [len(prompt) // tiny_settings.block_size * tiny_settings.block_size for prompt in prompts]
    writer, reader = runs["writer"], runs["reader"]
    assert (writer.labels.cached_tokens, writer.reply.cached_tokens) == (0, 0)
    # A fresh process, its own prefix cache empty: every full block of both prompts came from disk.
    assert (reader.labels.cached_tokens, reader.reply.cached_tokens) == tuple(full_blocks)
    queries, hits = reader.prefix_cache
    assert queries > 0 and hits == 0


async def test_damaged_files_are_computed_again_never_read(runs):
    # Every file had a right size and the wrong bytes: none was used, the engine computed the
    # blocks and answered as without the tier, and wrote the files again (run_engine waited).
    damaged, off = runs["damaged"], runs["off"]
    assert (damaged.labels.cached_tokens, damaged.reply.cached_tokens) == (0, 0)
    assert damaged.reply.token_ids == off.reply.token_ids
    assert damaged.labels.logprobs == pytest.approx(off.labels.logprobs, abs=1e-5)


async def test_kv_from_the_tier_answers_as_kv_computed(runs):
    off = runs["off"]
    assert any(value > float("-inf") for value in off.labels.logprobs)
    for tiered in (runs["writer"], runs["reader"]):
        assert tiered.reply.token_ids == off.reply.token_ids and tiered.reply.text == off.reply.text
        assert tiered.labels.logprobs == pytest.approx(off.labels.logprobs, abs=1e-5)


async def test_the_tier_leaves_the_model_as_many_threads_as_without_it(runs):
    # vLLM keeps a core more from the model for any KV connector: on two cores, none for the app.
    assert runs["off"].model_cpus and runs["writer"].model_cpus == runs["off"].model_cpus


async def test_no_shared_memory_is_left_behind(runs):
    # The CPU tier's region in /dev/shm loses its name once every process has mapped it
    # (kv_tier.py): its memory goes with the engine, even one that is killed.
    assert [run.offload_regions_named for run in runs.values()] == [set()] * len(runs)
