"""The KV tier's block files checked before use (backend/engine/kv_tier_files.py): vLLM's own
store and load functions on a temporary directory, the checks around them. A damaged file on
a real engine is in tests/engine/test_kv_tier.py."""

import errno
import logging
import shutil
from pathlib import Path

import pytest

from backend.engine import kv_tier_files
from backend.engine.kv_tier_files import SUFFIX, TierFileCorrupt, WriteTrouble, load_checked, store_checked

BLOCK = 4096
BLOCKS = 3


def buffer(fill: int = 0) -> memoryview:
    data = bytearray(BLOCK * BLOCKS)
    for index in range(BLOCKS):
        data[index * BLOCK : (index + 1) * BLOCK] = bytes([fill + index + 1]) * BLOCK
    return memoryview(data)


@pytest.fixture
def stored(tmp_path: Path) -> tuple[list[str], list[int]]:
    """Three blocks stored as the tier stores them: their files and offsets."""
    paths = [str(tmp_path / "r0" / "abc" / f"{index}.bin") for index in range(BLOCKS)]
    offsets = [index * BLOCK for index in range(BLOCKS)]
    store_checked(paths, buffer(), offsets, BLOCK, False, WriteTrouble(str(tmp_path)))
    return paths, offsets


def test_a_stored_block_has_its_checksum_and_loads_back_whole(stored):
    paths, offsets = stored
    assert all(Path(path).stat().st_size == BLOCK and Path(path + SUFFIX).exists() for path in paths)
    into = memoryview(bytearray(BLOCK * BLOCKS))
    load_checked(paths, into, offsets, BLOCK, False)
    assert bytes(into) == bytes(buffer())


@pytest.mark.parametrize("damage", ["other bytes", "no checksum", "another block's file"])
def test_a_damaged_file_fails_its_load_where_it_is_and_is_removed(stored, damage):
    paths, offsets = stored
    if damage == "other bytes":  # the same size: vLLM's own load takes it
        Path(paths[1]).write_bytes(b"\0" * BLOCK)
    elif damage == "no checksum":
        Path(paths[1] + SUFFIX).unlink()
    else:
        Path(paths[1]).write_bytes(Path(paths[2]).read_bytes())
    with pytest.raises(TierFileCorrupt, match="computed again") as failed:
        load_checked(paths, memoryview(bytearray(BLOCK * BLOCKS)), offsets, BLOCK, False)
    assert failed.value.num_succeeded == 1  # vLLM keeps the first block, computes the rest
    assert not Path(paths[1]).exists() and not Path(paths[1] + SUFFIX).exists()
    assert Path(paths[0]).exists() and Path(paths[2]).exists()


def test_a_short_file_fails_as_vllm_fails_it_after_the_blocks_before_are_checked(stored):
    paths, offsets = stored
    Path(paths[2]).write_bytes(b"\1" * (BLOCK // 2))
    with pytest.raises(OSError) as failed:
        load_checked(paths, memoryview(bytearray(BLOCK * BLOCKS)), offsets, BLOCK, False)
    assert not isinstance(failed.value, TierFileCorrupt) and failed.value.num_succeeded == 2
    Path(paths[0]).write_bytes(b"\0" * BLOCK)  # and one of those before it, damaged too
    with pytest.raises(TierFileCorrupt) as failed:
        load_checked(paths, memoryview(bytearray(BLOCK * BLOCKS)), offsets, BLOCK, False)
    assert failed.value.num_succeeded == 0


def test_a_block_stored_again_keeps_its_file_and_checksum(stored):
    paths, offsets = stored
    before = [Path(path + SUFFIX).read_text() for path in paths]
    store_checked(paths, buffer(fill=7), offsets, BLOCK, False, WriteTrouble("tier"))  # vLLM skips them
    load_checked(paths, memoryview(bytearray(BLOCK * BLOCKS)), offsets, BLOCK, False)
    assert [Path(path + SUFFIX).read_text() for path in paths] == before


def test_a_vanished_directory_is_made_again(stored, tmp_path):
    paths, offsets = stored
    shutil.rmtree(tmp_path / "r0")
    store_checked(paths, buffer(), offsets, BLOCK, False, WriteTrouble(str(tmp_path)))
    load_checked(paths, memoryview(bytearray(BLOCK * BLOCKS)), offsets, BLOCK, False)


def test_a_disk_that_takes_no_writes_costs_one_warning_not_the_engine(tmp_path, monkeypatch, caplog):
    paths = [str(tmp_path / f"{index}.bin") for index in range(BLOCKS)]
    offsets = [index * BLOCK for index in range(BLOCKS)]
    trouble = WriteTrouble(str(tmp_path))
    real_store = kv_tier_files.batch_store_block

    def fails_with(code: int, why: str):
        def store(*args):
            raise OSError(code, why)

        return store

    full = fails_with(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(kv_tier_files, "batch_store_block", full)
    with caplog.at_level(logging.WARNING, logger=kv_tier_files.__name__):
        for _ in range(3):
            store_checked(paths, buffer(), offsets, BLOCK, False, trouble)  # no exception: dropped
        monkeypatch.setattr(kv_tier_files, "batch_store_block", real_store)
        store_checked(paths, buffer(), offsets, BLOCK, False, trouble)
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 2
    assert "cannot be written (No space left on device)" in warnings[0] and "serves on" in warnings[0]
    assert "written again" in warnings[1]
    # Any other failure is vLLM's to report (its pool logs it and fails the job).
    monkeypatch.setattr(kv_tier_files, "batch_store_block", fails_with(errno.EIO, "I/O"))
    with pytest.raises(OSError, match="I/O"):
        store_checked([str(tmp_path / "new.bin")], buffer(), [0], BLOCK, False, trouble)
