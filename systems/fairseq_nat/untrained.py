"""A recipe's model with untrained weights, built in-process (``weights=random``): speed columns only.

Why: the speed column of a paper table depends on the architecture and the decoding loop, not on
what the weights learned, so it can be measured without days of fairseq-train. The model is built
by fairseq itself from the very arguments ``fairseq-train`` would get (``recipe_args`` +
``size_args``), over the same dictionary a trained run would binarise with, and seeded, so two
builds are identical. Outputs are meaningless; time them length-forced (:mod:`.forcing`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from systems.fairseq_nat.flags import recipe_args, size_args
from systems.fairseq_nat.presets import FairseqConfig
from systems.fairseq_nat.vocab import WordPieceLines

DICT_NAMES = ("dict.src.txt", "dict.tgt.txt")


def write_wordpiece_dicts(dict_dir: Path) -> None:
    """The fairseq dictionaries a WordPiece run gets: the BERT vocab in order, for source and target.

    ``fairseq-preprocess --srcdict <vocab> --joined-dictionary`` writes the same symbols in the same
    order (after fairseq's own four specials), so token ids match a trained run's exactly.
    """
    lines = WordPieceLines()
    for name in DICT_NAMES:
        lines.dictionary(Path(dict_dir) / name)


def untrained_namespace(cfg: FairseqConfig, dict_dir: Path) -> Any:
    """The ``argparse.Namespace`` fairseq-train would parse for ``cfg`` over ``dict_dir``: what builds the
    untrained model, and the ``args`` a checkpoint of it carries (CTranslate2's converter reads them)."""
    from systems.fairseq_nat.decode import import_fairseq_quietly

    import_fairseq_quietly()
    from fairseq import options

    missing = [n for n in DICT_NAMES if not (Path(dict_dir) / n).is_file()]
    if missing:
        raise FileNotFoundError(f"{dict_dir}: missing {', '.join(missing)}; write the dictionaries first.")
    args = [str(dict_dir), *recipe_args(cfg), *size_args(cfg), "--source-lang", "src", "--target-lang", "tgt"]
    args.append("--cpu")  # builds on the host; the harness places the model on the run's device
    with warnings.catch_warnings():  # hydra's deprecation chatter on every config conversion
        warnings.simplefilter("ignore")
        return options.parse_args_and_arch(options.get_training_parser(), args)


def build_untrained(cfg: FairseqConfig, dict_dir: Path) -> tuple[Any, Any]:
    """``(model, task)`` for ``cfg``'s architecture over the dictionaries in ``dict_dir``, seeded by ``cfg.seed``."""
    import torch

    namespace = untrained_namespace(cfg, dict_dir)  # imports fairseq quietly first
    from fairseq import tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    with warnings.catch_warnings():  # hydra's deprecation chatter on every config conversion
        warnings.simplefilter("ignore")
        fs_cfg = convert_namespace_to_omegaconf(namespace)
        task = tasks.setup_task(fs_cfg.task)
        torch.manual_seed(cfg.seed)
        model = task.build_model(fs_cfg.model)
    return model, task
