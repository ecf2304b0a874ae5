"""Builder for Quora paraphrase generation on the Du & Ji (2019) split (``quora/duji2019``)."""

from __future__ import annotations

from pathlib import Path

from bench.api.errors import DataError
from bench.api.tasks import Built, Task, read_lines
from bench.api.types import Example

_FILES = {"train": "train", "dev": "val", "test": "test"}


def build(task: Task, root: Path) -> Built:
    return Built(splits={name: _split(root, name, stem) for name, stem in _FILES.items()})


def _split(root: Path, name: str, stem: str) -> list[Example]:
    src_path, tgt_path = root / f"quora/duji2019/{stem}.src", root / f"quora/duji2019/{stem}.tgt"
    srcs, tgts = read_lines(src_path), read_lines(tgt_path)
    if len(srcs) != len(tgts):
        raise DataError(f"{src_path} has {len(srcs)} lines but {tgt_path} has {len(tgts)}; they must pair.")
    out = []
    for i, (src, tgt) in enumerate(zip(srcs, tgts, strict=True)):
        if not src.strip() or not tgt.strip():
            bad = src_path if not src.strip() else tgt_path
            raise DataError(f"{bad}:{i + 1}: empty line; every pair needs a question and a paraphrase.")
        # key: the scoring group key of the MIST recipe (lowercased source question)
        out.append(
            Example(
                id=f"quora-{name}-{i}",
                source=src,
                target=tgt,
                fields={"key": src.strip().lower(), "line": str(i)},
            )
        )
    return out
