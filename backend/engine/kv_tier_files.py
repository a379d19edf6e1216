"""vLLM's file-system KV tier, with every block file checked before its KV is used.

vLLM's fs tier (`vllm/v1/kv_offload/tiering/fs`) writes a file per block (or chunk of blocks),
named by the block's hash, and reads it back checking only its length: a file overwritten
with other bytes of the same size (another block's, a disk's bit rot) would be loaded as the
prompt's KV and the model would answer from it. `CheckedFileSystemTier` is that tier with one
change: beside each file it writes a CRC-32 of the block (`<file>.crc32`), and a load whose
file does not match its checksum, or has none, fails as a short read does, so vLLM computes
those blocks again and the file is written anew.

A tier that cannot be written (a full or read-only disk, a directory that vanished and cannot
be made again) stops costing anything but a log line: the store is dropped, one warning says
why, and a later store that succeeds says the tier writes again. Lookups of files never written
miss, so the engine computes what it cannot read; it never serves from a file it did not check.

vLLM loads it as an out-of-tree tier by name (`type` and `module_path` in the tier's config,
vllm_options.kv_transfer_config), in its scheduler process, where the tier's I/O threads run.
"""

import contextlib
import errno
import functools
import logging
import os
import threading
import zlib
from typing import Any

from vllm.v1.kv_offload.tiering.fs.io import batch_load_block, batch_store_block
from vllm.v1.kv_offload.tiering.fs.manager import FileSystemTierManager

logger = logging.getLogger(__name__)
SUFFIX = ".crc32"
# A disk that cannot take a write: the store is dropped, the engine carries on computing.
UNWRITABLE = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT}


class TierFileCorrupt(OSError):
    """A block file whose bytes are not those stored: its blocks are computed again."""


def crc_of(view: memoryview, offset: int, size: int) -> str:
    return f"{zlib.crc32(view[offset : offset + size]):08x}"


def _write_crc(path: str, crc: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)  # made again if the tier's directory vanished
    temporary = f"{path}{SUFFIX}.{threading.get_ident()}.tmp"
    with open(temporary, "w") as out:
        out.write(crc)
    os.replace(temporary, path + SUFFIX)  # whole or absent, as vLLM writes its block files


def _read_crc(path: str) -> str | None:
    try:
        with open(path + SUFFIX) as source:
            return source.read().strip()
    except OSError:
        return None


def _discard(path: str) -> None:
    for name in (path, path + SUFFIX):
        with contextlib.suppress(OSError):
            os.remove(name)


class WriteTrouble:
    """One warning when the tier stops taking writes, one line when it takes them again."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.failing: str | None = None
        self._lock = threading.Lock()

    def failed(self, error: OSError) -> None:
        with self._lock:
            first, self.failing = self.failing is None, error.strerror or str(error)
        if first:
            logger.warning(
                "KV tier at %s cannot be written (%s): new prefixes are not kept on disk and are "
                "computed again after a restart; the engine serves on",
                self.root,
                self.failing,
            )

    def succeeded(self) -> None:
        with self._lock:
            recovered, self.failing = self.failing is not None, None
        if recovered:
            logger.warning("KV tier at %s is written again", self.root)


def store_checked(
    paths: list[str], view: memoryview, offsets: list[int], size: int, o_direct: bool, trouble: WriteTrouble
) -> None:
    """vLLM's store, each new file's checksum written first: a file is never there without it.
    A file already there (vLLM skips it) keeps the checksum of its own bytes."""
    flat = view.cast("B")
    try:
        for path, offset in zip(paths, offsets, strict=True):
            if not os.path.exists(path):
                _write_crc(path, crc_of(flat, offset, size))
        batch_store_block(paths, view, offsets, size, o_direct)
    except OSError as error:
        if error.errno not in UNWRITABLE:
            raise
        trouble.failed(error)  # dropped: what is not written is not found, and is computed
        return
    trouble.succeeded()


def load_checked(paths: list[str], view: memoryview, offsets: list[int], size: int, o_direct: bool) -> None:
    """vLLM's load, then every block it loaded checked against its checksum. The first that
    fails is removed with its checksum and the load fails there (`num_succeeded`, as vLLM's own
    failures say), so vLLM keeps the blocks before it and computes it and those after it."""
    loaded, failure = len(paths), None
    try:
        batch_load_block(paths, view, offsets, size, o_direct)
    except OSError as error:  # a short or unreadable file: vLLM's own failure, after its good ones
        loaded, failure = getattr(error, "num_succeeded", 0), error
    flat = view.cast("B")
    for index in range(loaded):
        stored = _read_crc(paths[index])
        if stored != crc_of(flat, offsets[index], size):
            _discard(paths[index])
            why = "has no checksum" if stored is None else "does not match its checksum"
            message = f"KV tier file {paths[index]} {why}: removed, its blocks are computed again"
            corrupt = TierFileCorrupt(errno.EIO, message)
            corrupt.num_succeeded = index  # type: ignore[attr-defined]
            raise corrupt
    if failure is not None:
        raise failure


class CheckedFileSystemTier(FileSystemTierManager):  # type: ignore[misc]  # vLLM is untyped here
    """vLLM's file-system tier whose jobs run `store_checked` and `load_checked`. The two
    submit methods are vLLM's own with only the function each job runs changed; queues,
    lookups, threads, the keeping of a failed load's good blocks and the metrics are vLLM's."""

    def __init__(self, *args: Any, root_dir: str, **kwargs: Any) -> None:
        super().__init__(*args, root_dir=root_dir, **kwargs)
        self._trouble = WriteTrouble(root_dir)

    def _paths_and_offsets(self, job: Any) -> tuple[list[str], list[int]]:
        paths = [self.file_mapper.get_file_name(key) for key in job.keys]
        return paths, [int(chunk) * self._block_size for chunk in job.chunk_ids]

    def submit_store(self, job_metadata: Any) -> None:
        job_id, keys = job_metadata.job_id, list(job_metadata.keys)
        if self.events is not None:
            self._store_job_keys[job_id] = keys
        paths, offsets = self._paths_and_offsets(job_metadata)
        view, size, o_direct = self._primary_kv_view, self._block_size, self._use_o_direct
        task = functools.partial(store_checked, paths, view, offsets, size, o_direct, self._trouble)
        self._job_block_counts[job_id] = len(keys)
        self._pool.enqueue_store(job_id, 1, [task])

    def submit_load(self, job_metadata: Any) -> None:
        job_id = job_metadata.job_id
        self._load_job_keys[job_id] = list(job_metadata.keys)
        self._job_block_counts[job_id] = len(job_metadata.keys)
        paths, offsets = self._paths_and_offsets(job_metadata)

        def load_task() -> None:
            try:
                load_checked(paths, self._primary_kv_view, offsets, self._block_size, self._use_o_direct)
            except OSError as error:  # read by get_finished_jobs: which blocks to keep
                self._load_progress[job_id] = getattr(error, "num_succeeded", 0)
                raise  # vLLM's pool logs it, one line

        self._pool.enqueue_load(job_id, 1, [load_task])
