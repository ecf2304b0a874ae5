"""Checkpoint integrity: fairseq checkpoints are pickles, so only files this harness wrote are loaded.

fairseq stores argparse/omegaconf objects in its checkpoints, so loading needs full unpickling
(``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` under torch >= 2.6), which can run arbitrary code from a
crafted file. Every checkpoint's sha256 is recorded in ``manifest.json`` as soon as fairseq reports
it saved; a file is loaded (or resumed from) only when its bytes still hash to the recorded value,
and the permissive flag is set only around that one load, never for the whole process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.api.checkpoints import reading_checkpoint
from bench.api.errors import UserError

MANIFEST = "manifest.json"
UNSAFE_ENV = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"
#: the file names fairseq-train writes (checkpoint_last.pt, checkpoint_best.pt, checkpoint_3_500.pt, ...)
CHECKPOINT_RE = re.compile(r"^checkpoint(_last|_best|\d+|_\d+_\d+|\.best_.+)\.pt$")


class UntrustedCheckpointError(UserError, RuntimeError):
    """A checkpoint is missing from the manifest or its bytes changed since it was recorded."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Manifest:
    """``<save_dir>/manifest.json``: name -> {sha256, size, mtime_ns} for the checkpoints written here."""

    def __init__(self, save_dir: Path) -> None:
        self.save_dir = Path(save_dir)
        self.path = self.save_dir / MANIFEST
        self.data: dict[str, Any] = {}
        if self.path.is_file():
            with reading_checkpoint(self.path):
                self.data = json.loads(self.path.read_text(encoding="utf-8"))
                if not isinstance(self.data, dict) or not isinstance(self.data.setdefault("files", {}), dict):
                    raise TypeError("not a JSON object with a 'files' object")
        self.data.setdefault("files", {})

    @property
    def files(self) -> dict[str, dict[str, Any]]:
        return self.data["files"]

    def save(self) -> None:
        from bench.api.atomic import write_json_atomic

        write_json_atomic(self.path, self.data)

    def record_new(self) -> list[str]:
        """Hash every fairseq checkpoint file that is new or changed (size/mtime) since last recorded.

        Called when fairseq logs "Saved checkpoint" (it writes to a temp file and renames, so the
        files are complete) and once more when the training process exits cleanly.
        """
        changed = []
        present = set()
        for p in sorted(self.save_dir.glob("checkpoint*.pt")):
            if not CHECKPOINT_RE.match(p.name):
                continue
            try:  # fairseq runs beside us: --keep-interval-updates may delete a file we just listed
                st = p.stat()
                old = self.files.get(p.name)
                if old and old["size"] == st.st_size and old["mtime_ns"] == st.st_mtime_ns:
                    present.add(p.name)
                    continue
                entry = {"sha256": sha256_file(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
            except FileNotFoundError:
                continue  # gone: treated like any removed checkpoint below
            present.add(p.name)
            self.files[p.name] = entry
            changed.append(p.name)
        for gone in set(self.files) - present:  # fairseq's --keep-interval-updates removed it
            del self.files[gone]
        if changed or present != set(self.files):
            self.save()
        return changed

    def verify(self, path: Path) -> str:
        """The file's sha256 if it is a recorded checkpoint with unchanged bytes; raise otherwise."""
        path = Path(path)
        entry = self.files.get(path.name) if path.parent.resolve() == self.save_dir.resolve() else None
        if entry is None:
            raise UntrustedCheckpointError(
                f"Refusing to load {path}: it is not in {self.path}, so this harness did not write it. "
                "Checkpoints are pickles and can run code when loaded. Delete the file (training then "
                "restarts), or run again with `bench run ... --fresh`."
            )
        digest = sha256_file(path)
        if digest != entry["sha256"]:
            raise UntrustedCheckpointError(
                f"Refusing to load {path}: its sha256 {digest[:16]}... differs from the one recorded when "
                f"it was written ({entry['sha256'][:16]}...; {self.path}). The file was modified or truncated; "
                "run again with `bench run ... --fresh` (it discards the workdir and retrains)."
            )
        return digest


@contextlib.contextmanager
def unsafe_pickle_load() -> Iterator[None]:
    """Allow full unpickling in ``torch.load`` for the duration of the block only (restores the old value)."""
    old = os.environ.get(UNSAFE_ENV)
    os.environ[UNSAFE_ENV] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(UNSAFE_ENV, None)
        else:
            os.environ[UNSAFE_ENV] = old


def read_verified(path: Path, manifest: Manifest) -> bytes:
    """The checkpoint's bytes, read once and checked against the manifest (no check/use race)."""
    manifest.verify(path)  # clear errors for missing entries
    data = Path(path).read_bytes()
    if hashlib.sha256(data).hexdigest() != manifest.files[Path(path).name]["sha256"]:
        raise UntrustedCheckpointError(f"Refusing to load {path}: it changed while being read.")
    return data


def load_verified_state(path: Path, manifest: Manifest, arg_overrides: dict[str, Any] | None = None) -> Any:
    """fairseq's ``load_checkpoint_to_cpu`` on verified bytes, with full unpickling allowed only here.

    The verified bytes go to a private temporary file, so what is unpickled is exactly what was hashed.
    """
    import tempfile

    from fairseq import checkpoint_utils

    data = read_verified(path, manifest)
    with tempfile.TemporaryDirectory(prefix="bench-ckpt-") as tmp:
        private = Path(tmp) / "checkpoint.pt"
        private.write_bytes(data)
        del data
        with unsafe_pickle_load(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD.*")
            return checkpoint_utils.load_checkpoint_to_cpu(str(private), arg_overrides)
