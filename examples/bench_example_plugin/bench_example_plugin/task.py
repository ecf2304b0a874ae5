"""``toy_pairs``: sentence simplification pairs written for this example, shipped in ``data/``.

A plugin task ships its raw file and a ``SHA256SUMS`` beside it (``data_root``); the harness
verifies the file, builds and caches the splits, and checks their counts, exactly as for the
built-in tasks.
"""

from __future__ import annotations

from pathlib import Path

from bench.api import Built, DataError, Example, SplitSpec, Task, read_lines, splits

DATA = Path(__file__).resolve().parent / "data"
SPLITS = ("train", "dev", "test")


def build(task: Task, root: Path) -> Built:
    """``pairs.tsv``: one ``split<TAB>source<TAB>target`` line per example."""
    path = root / "pairs.tsv"
    out: dict[str, list[Example]] = {name: [] for name in SPLITS}
    for lineno, line in enumerate(read_lines(path), 1):
        parts = line.split("\t")
        if len(parts) != 3 or parts[0] not in out or not parts[1].strip() or not parts[2].strip():
            raise DataError(f"{path}:{lineno}: expected 'split<TAB>source<TAB>target' with split in "
                            f"{', '.join(SPLITS)}; got {line!r}")
        split = parts[0]
        out[split].append(Example(id=f"toy-{split}-{len(out[split])}", source=parts[1], target=parts[2]))
    return Built(splits=out)


TASK = Task(
    name="toy_pairs",
    version=1,
    family="paraphrase",
    splits=splits(SplitSpec("train", 12), SplitSpec("dev", 4), SplitSpec("test", 6)),
    default_recipes=("exact_match", "sacrebleu"),
    recipes=("exact_match", "sacrebleu"),
    max_source_len=32,
    max_target_len=16,
    description="Toy sentence shortening, written for the example plugin (22 pairs).",
    citation="bench example plugin",
    builder="bench_example_plugin.task:build",
    raw_files=("pairs.tsv",),
    data_root=str(DATA),
)
