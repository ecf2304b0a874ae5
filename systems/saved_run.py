"""The files a trained run leaves in its workdir, and reading them back for ``init_from``.

A workdir holds a meta json (everything needed to rebuild the model besides the weights: the
backbone config, the tokenizer's casing, the sizes), ``vocab.txt`` and the weights (a ``best/``
copy where the family keeps one, else the newest complete checkpoint). Every family that decodes
another run's model reads those the same way, so the checks and their error messages live here
once. Module-level imports stay light; torch and the backbone load inside :meth:`SavedRun.load`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

VOCAB = "vocab.txt"
CHECKPOINTS = "checkpoints"
WEIGHTS = "model.safetensors"
_NEEDED = ("lowercase", "backbone_config")  # what SavedRun itself reads from the meta file

M = TypeVar("M")


def write_run_files(workdir: Path, meta_name: str, tok: Any, meta: Mapping[str, Any]) -> None:
    """Write ``vocab.txt`` (token of every id, in id order) and ``meta_name`` into ``workdir``."""
    vocab = [tok.id_to_token.get(i, "[UNK]") for i in range(tok.vocab_size)]  # ids a duplicate token left empty
    (workdir / VOCAB).write_text("\n".join(vocab) + "\n", encoding="utf-8")
    (workdir / meta_name).write_text(json.dumps(meta, indent=1))


def _fix(via: str) -> str:
    return (f"re-run the `bench run ...` that made it (training resumes from its last checkpoint), "
            f"or pass {via}=<workdir of a finished run>")


@dataclass(frozen=True)
class SavedRun:
    """A finished run's workdir, checked: its meta, vocab and the weights file to load."""

    workdir: Path
    meta: dict[str, Any]
    weights: Path
    family: str
    via: str

    @property
    def checkpoint(self) -> str:
        """Name of the folder the weights come from (``best`` or ``step-<N>``), for provenance."""
        return self.weights.parent.name

    def provenance(self, trained_as: str) -> dict[str, str]:
        """What a decode-only run records as ``config.loaded_from``: whose weights, from which folder."""
        return {"workdir": str(self.workdir), "checkpoint": self.checkpoint, "trained_as": trained_as}

    def tokenizer(self, extra_special: Sequence[str] = ()) -> Any:
        """The run's WordPiece tokenizer, rebuilt from its ``vocab.txt`` with its casing
        (``extra_special``: tokens the family added to the vocabulary, kept whole)."""
        from systems.backbone import WordPieceTokenizer

        return WordPieceTokenizer(self.workdir / VOCAB, lowercase=self.meta["lowercase"], extra_special=extra_special)

    def load(self, wrap: Callable[[Any], M]) -> M:
        """``wrap(backbone)`` over the run's backbone config, with the run's weights loaded, in eval mode."""
        from safetensors import SafetensorError
        from safetensors.torch import load_model

        from systems.backbone import Backbone, BackboneConfig

        model = wrap(Backbone(BackboneConfig.from_hf(self.meta["backbone_config"])))
        try:
            load_model(model, str(self.weights))  # type: ignore[arg-type]
        except (OSError, RuntimeError, SafetensorError) as e:
            raise ValueError(
                f"{self.weights}: cannot load it into a {self.family} model ({e}); {_fix(self.via)}"
            ) from e
        model.eval()  # type: ignore[attr-defined]
        return model


def open_run(
    workdir: Path,
    meta_name: str,
    family: str,
    *,
    keys: Sequence[str] = (),
    best: str | None = None,
    via: str = "init_from",
) -> SavedRun:
    """Check ``workdir`` holds a finished ``family`` run and say which weights to load.

    ``keys``: further top-level meta keys the caller reads. ``best``: a folder whose
    ``model.safetensors`` wins over the newest checkpoint. ``via``: the override that named the
    workdir, for the error messages. Every problem is an error naming the file and the fix.
    """
    from systems.training import latest_checkpoint

    workdir = Path(workdir)
    meta_file = workdir / meta_name
    if not meta_file.is_file():
        raise FileNotFoundError(
            f"{meta_file} not found: {via} must name the workdir of a finished {family} run; {_fix(via)}"
        )
    try:
        meta = json.loads(meta_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{meta_file}: not valid JSON ({e}); {_fix(via)}") from e
    missing = [k for k in (*_NEEDED, *keys) if not isinstance(meta, dict) or k not in meta]
    if missing:
        raise ValueError(f"{meta_file}: not a {family} run's meta file (lacks {missing}); {_fix(via)}")
    if not (workdir / VOCAB).is_file():
        raise FileNotFoundError(f"{workdir / VOCAB} not found (written with {meta_name}); {_fix(via)}")
    weights = workdir / best / WEIGHTS if best else None
    if weights is None or not weights.is_file():
        last = latest_checkpoint(workdir / CHECKPOINTS)
        if last is None:
            kept = f"no {best}/{WEIGHTS} and " if best else ""
            raise FileNotFoundError(
                f"{workdir}: {kept}no complete checkpoint under {workdir / CHECKPOINTS}; "
                f"its fit has not finished: {_fix(via)}"
            )
        weights = last / WEIGHTS
    return SavedRun(workdir, meta, weights, family, via)
