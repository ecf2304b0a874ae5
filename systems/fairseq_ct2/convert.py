"""A fairseq checkpoint -> a CTranslate2 model directory, once per checkpoint (keyed by its sha256).

Why keyed by the bytes: ``fairseq_transformer_ct2`` converts whatever checkpoint the shared workdir holds,
and a resumed or retrained run replaces that file; a directory named by the hash can never describe other
weights. The conversion is float as saved (no quantization): the compute type is chosen when the model is
loaded (:mod:`.decode`), so int8 and float32 runs share one converted directory.

Loading: the converter calls ``torch.load(weights_only=True)``; a fairseq checkpoint's model config is an
``argparse.Namespace``, which is allowed by name (``torch.serialization.safe_globals``), nothing else. A
trained checkpoint is first checked against the manifest that fairseq-train's runner wrote, and the converter
reads a private copy of exactly the verified bytes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

#: under the model's workdir: one directory per converted checkpoint, named by its sha256 (first 16 hex)
CT2_DIR = "ct2"
#: written last into a finished conversion: its presence means the directory is complete
DONE = "converted.json"
LANGS = {"source_lang": "src", "target_lang": "tgt"}
INSTALL_HINT = ("ctranslate2 is not installed: it is the optional extra [ct2]: pip install -e '.[ct2]' "
                "(`make fairseq` installs it)")


def require_ctranslate2() -> Any:
    """The ``ctranslate2`` module, or an ImportError that names the extra to install."""
    try:
        import ctranslate2
    except ImportError as err:
        raise ImportError(INSTALL_HINT) from err
    return ctranslate2


def converted_dir(root: Path, sha256: str) -> Path:
    return Path(root) / CT2_DIR / sha256[:16]


def is_converted(root: Path, sha256: str) -> bool:
    return (converted_dir(root, sha256) / DONE).is_file()


def convert_verified(checkpoint: Path, manifest: Any, dict_dir: Path, root: Path) -> tuple[Path, str]:
    """Convert a checkpoint the harness wrote (checked against ``manifest``) under ``root``; returns
    ``(directory, sha256)``. An existing conversion of the same bytes is reused."""
    from systems.fairseq_nat.checkpoints import read_verified

    sha = manifest.verify(checkpoint)
    if is_converted(root, sha):
        return converted_dir(root, sha), sha
    data = read_verified(checkpoint, manifest)
    with tempfile.TemporaryDirectory(prefix="bench-ct2-") as tmp:
        private = Path(tmp) / "checkpoint.pt"
        private.write_bytes(data)
        del data
        return convert_file(private, sha, dict_dir, root, source=Path(checkpoint).name), sha


def convert_file(checkpoint: Path, sha256: str, dict_dir: Path, root: Path, source: str) -> Path:
    """Convert ``checkpoint`` (whose sha256 the caller has checked or computed) into its keyed directory,
    atomically: a killed conversion leaves a temporary directory, never a half-written keyed one."""
    out = converted_dir(root, sha256)
    if is_converted(root, sha256):
        return out
    ctranslate2 = require_ctranslate2()
    from ctranslate2.converters import FairseqConverter

    from systems.fairseq_nat.decode import import_fairseq_quietly

    import_fairseq_quietly()
    import torch

    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        converter = FairseqConverter(str(checkpoint), data_dir=str(dict_dir), **LANGS)
        with torch.serialization.safe_globals([argparse.Namespace]):
            converter.convert(str(staging / "model"), force=True)
        for item in (staging / "model").iterdir():
            item.rename(staging / item.name)
        (staging / "model").rmdir()
        (staging / DONE).write_text(json.dumps({"checkpoint": source, "sha256": sha256,
                                                "ctranslate2": ctranslate2.__version__}, indent=1))
        if out.exists():  # an incomplete directory from an older layout: replace it
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return out


def convert_untrained(model: Any, namespace: argparse.Namespace, dict_dir: Path, root: Path) -> tuple[Path, str]:
    """``weights=random``: save the in-process model as a fairseq checkpoint (``args`` + ``model``, what the
    converter reads), hash it and convert it once; the checkpoint itself is not kept (1 GB at paper size)."""
    import torch

    from systems.fairseq_nat.checkpoints import sha256_file

    with tempfile.TemporaryDirectory(prefix="bench-ct2-") as tmp:
        path = Path(tmp) / "checkpoint_untrained.pt"
        # the converter reads the dictionaries from its data_dir; a path in the args would key equal weights apart
        args = argparse.Namespace(**{**vars(namespace), "data": "<dicts>"})
        torch.save({"args": args, "cfg": None, "model": model.state_dict()}, path)
        sha = sha256_file(path)
        return convert_file(path, sha, dict_dir, root, source="untrained (weights=random)"), sha

