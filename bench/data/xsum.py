"""Builder for XSum: full splits from a user-supplied corpus, partial splits from the shared data.

The shared data has no full corpus, only the official split ids, the 11,334 gold test summaries
(lowercased, PTB-tokenized; line i = test id i) and 5,113 documents recovered from public subsets.
So without the user's copy we build ``test-refs`` (all references, no documents: for scoring
outputs made elsewhere), ``test-available`` and ``validation-available`` (partial, always marked).
Test targets are the gold lines, so ROUGE on them matches the published protocol; the recovered
cased summary is kept in ``fields['summary_recovered']`` (it equals the gold line after
lowercasing, PTB bracket/pound mapping and dropping non-alphanumerics for 4,033 of 4,034 ids; the
exception, 39906984, reads "that" where the gold line reads "which").

A full corpus is looked for in ``$BENCH_XSUM`` or ``<data dir>/xsum/full``, in one of two forms:
``*.jsonl`` / ``*.parquet`` files whose records have ``id``, ``document`` and ``summary`` (e.g.
the Hugging Face ``EdinburghNLP/xsum`` export), or the original ``bbc-summary-data`` folder of
``<id>.summary`` files. Splits are assigned by the official split file, in its id order.
``bench fetch --data`` puts the hub copy's data files there (:func:`full_destination`) and checks them
with :func:`check_full`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.api.errors import DataError
from bench.api.reading import parse_json, read_json, read_text
from bench.api.tasks import Built, Task, read_lines
from bench.api.types import Example
from bench.data.sources import DATA_FIX, fetch_command, verify_raw

SPLIT_JSON = "xsum/XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json"
GOLD = "xsum/gold-test-sentences.txt"
RECOVERED = "xsum/documents-recovered.jsonl"
FULL_ENV = "BENCH_XSUM"
FULL_SPLITS = ("train", "validation", "test")
#: the partial splits built from the recovered documents (present in the shared data, not fetched)
RECOVERED_SPLITS = ("test-available", "validation-available")
#: The public hub copy of the corpus (records with id, document, summary) that `bench fetch --data` reads.
HUB_DATASET = "EdinburghNLP/xsum"
#: Revisions tried in order: the repo's own data files, then the hub's automatic parquet export of it.
HUB_REVISIONS = ("main", "refs/convert/parquet")
DATA_SUFFIXES = (".parquet", ".jsonl")


def build(task: Task, root: Path) -> Built:
    split_ids = _split_ids(root / SPLIT_JSON)
    gold = read_lines(root / GOLD)
    if len(gold) != len(split_ids["test"]):
        raise DataError(
            f"{root / GOLD} has {len(gold)} lines but {root / SPLIT_JSON} lists "
            f"{len(split_ids['test'])} test ids; line i must belong to test id i."
        )
    splits = {
        "test-refs": [
            Example(id=tid, source="", target=gold[i], fields={"test_index": str(i)})
            for i, tid in enumerate(split_ids["test"])
        ]
    }
    if (root / RECOVERED).is_file():  # optional: no single public source; the full corpus does without it
        splits.update(_available(root / RECOVERED, split_ids, gold))
    extra: dict[str, Path] = {}
    full_dir = find_full(root)
    if full_dir is not None:
        records, files = read_full(full_dir)
        splits.update(full_splits(records, split_ids, gold, full_dir))
        extra.update({f"xsum-full/{p.relative_to(full_dir)}": p for p in files})
    return Built(splits=splits, extra_sources=extra)


def find_full(root: Path) -> Path | None:
    """The user's full-XSum directory, or None when none is supplied."""
    env = os.environ.get(FULL_ENV)
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise DataError(
                f"${FULL_ENV}={env} is not a directory. Fix: point it at a folder with XSum "
                "*.jsonl/*.parquet files or the bbc-summary-data folder, or unset it."
            )
        return path
    path = root / "xsum" / "full"
    return path if path.is_dir() else None


def full_destination(root: Path) -> Path:
    """Where a fetched full XSum goes: ``$BENCH_XSUM`` when set (the builder reads it first), else
    ``<data dir>/xsum/full``."""
    env = os.environ.get(FULL_ENV)
    return Path(env).expanduser() if env else root / "xsum" / "full"


@dataclass(frozen=True)
class FullCheck:
    """A full-XSum copy checked against the pins: examples per official split, and how many test summaries
    equal their gold line once both are normalised (:func:`_loose`; the gold lines are lowercased and
    PTB-tokenized, so this is agreement of content, not of bytes)."""

    counts: dict[str, int]
    test_matching_gold: int


def check_full(root: Path, full_dir: Path) -> FullCheck:
    """Check a full-XSum copy against what the harness pins: the split file and gold lines must match
    ``SHA256SUMS``, and every official id of every split must be in the copy (a missing one raises
    ``DataError`` naming it), so the built splits have the official ids and counts."""
    verify_raw(root, (SPLIT_JSON, GOLD))
    split_ids = _split_ids(root / SPLIT_JSON)
    gold = read_lines(root / GOLD)
    records, _ = read_full(full_dir)
    splits = full_splits(records, split_ids, gold, full_dir)
    matching = sum(_loose(ex.target) == _loose(gold[i]) for i, ex in enumerate(splits["test"]))
    return FullCheck({name: len(exs) for name, exs in splits.items()}, matching)


def unavailable(root: Path, split: str) -> str | None:
    """Why ``split`` cannot be built from ``root`` (one line, with the fix), or None when its source is here: the
    full splits need the full corpus, the ``-available`` ones the recovered documents."""
    if split in FULL_SPLITS:
        return None if find_full(root) is not None else full_missing_message(root, split)
    if split in RECOVERED_SPLITS and not (root / RECOVERED).is_file():
        have_full = find_full(root) is not None
        instead = "test" if split.startswith("test") else "validation"
        return (f"XSum split '{split}' is built from {root / RECOVERED} (5,113 documents recovered from public "
                "subsets, in the shared data; no single public source, so `bench fetch --data` does not get it), "
                "which is not here. Fix: " + (f"use --split {instead}: the full corpus is here" if have_full else
                f"`{fetch_command(root)}` gets the full corpus into {full_destination(root)} (then --split "
                f"{instead}), or point --data-dir at the shared data") + ".")
    return None


def full_missing_message(root: Path, split: str) -> str:
    """One line for a run that asked for a full split: the training ones say what trains without them."""
    if split != "test":
        return training_missing_message(root)
    return (
        f"XSum split 'test' needs the full XSum corpus, which is not on this machine (looked at ${FULL_ENV} and "
        f"{root / 'xsum' / 'full'}). Fix: `{fetch_command(root)}` gets it into {full_destination(root)} where there "
        "is internet; or leave --split out (a run then scores test-available, PARTIAL: 4,034 of 11,334 recovered "
        "test documents), or score outputs made elsewhere with --split test-refs."
    )


def training_missing_message(root: Path) -> str:
    """Why an XSum run that trains cannot run here, and the two ways on: fetch the corpus, or the smoke budget."""
    return (
        f"XSum's 204,045 training documents are not on this machine (looked at ${FULL_ENV} and "
        f"{root / 'xsum' / 'full'}; the shared data holds only 5,113 recovered test/validation documents). "
        f"Fix: `{fetch_command(root)}` gets the full corpus ({HUB_DATASET}) into {full_destination(root)} where there "
        "is internet, or drop --budget: the default budget, smoke, trains on the recovered validation documents (a "
        "plumbing check)."
    )


def _split_ids(path: Path) -> dict[str, list[str]]:
    try:
        data = read_json(path, DATA_FIX)
        return {name: [str(i) for i in data[name]] for name in FULL_SPLITS}
    except (KeyError, TypeError) as e:
        raise DataError(f"{path}: not the XSum split file with train/validation/test id lists ({e}).") from e


def _available(path: Path, split_ids: dict[str, list[str]], gold: list[str]) -> dict[str, list[Example]]:
    index = {name: {tid: i for i, tid in enumerate(ids)} for name, ids in split_ids.items()}
    rows: dict[str, list[tuple[int, Example]]] = {"test": [], "validation": []}
    for lineno, line in enumerate(read_lines(path), 1):
        rec = parse_json(line, f"{path}:{lineno}", DATA_FIX)
        if not isinstance(rec, dict):
            raise DataError(f"{path}:{lineno}: not an XSum record (a JSON object with id, document, summary).")
        split, doc_id = rec.get("split"), str(rec.get("id"))
        if split not in rows or doc_id not in index[split]:
            raise DataError(f"{path}:{lineno}: id {doc_id} is not a {split!r} id of {SPLIT_JSON}.")
        i = index[split][doc_id]
        summary = rec.get("summary") or ""
        fields = {
            "document": rec["document"],
            f"{split}_index": str(i),
            "summary_recovered": summary,
            "doc_format": rec.get("doc_format") or "",
            "doc_source": rec.get("doc_source") or "",
            "summary_source": rec.get("summary_source") or "",
        }
        if split == "test":
            fields["summary_matches_gold"] = "1" if summary and _loose(summary) == _loose(gold[i]) else "0"
            target = gold[i]
        else:
            fields["has_reference"] = "1" if summary else "0"
            target = summary
        rows[split].append((i, Example(id=doc_id, source=rec["document"], target=target, fields=fields)))
    return {
        f"{split}-available": [ex for _, ex in sorted(pairs, key=lambda p: p[0])]
        for split, pairs in rows.items()
    }


def _loose(text: str) -> str:
    """Compare a cased summary with a gold line: lowercase, PTB brackets, '£' as '#', alnum only."""
    text = text.lower().replace("(", "-lrb-").replace(")", "-rrb-").replace("£", "#")
    return "".join(c for c in text if c.isalnum())


def read_full(full_dir: Path) -> tuple[dict[str, tuple[str, str]], list[Path]]:
    """``{id: (document, summary)}`` from a user's XSum copy, and the files it was read from."""
    summaries = sorted(full_dir.rglob("*.summary"))
    if summaries:
        return {p.stem: _parse_summary_file(p) for p in summaries}, summaries
    files = sorted([*full_dir.rglob("*.jsonl"), *full_dir.rglob("*.parquet")])
    if not files:
        raise DataError(f"{full_dir}: no *.summary, *.jsonl or *.parquet files; cannot read full XSum.")
    records: dict[str, tuple[str, str]] = {}
    for path in files:
        for where, rec in _records(path):
            try:
                records[str(rec["id"])] = (str(rec["document"]), str(rec["summary"]))
            except KeyError as e:
                raise DataError(f"{where}: XSum record lacks field {e}; need id, document, summary.") from e
    return records, files


def _records(path: Path) -> Iterator[tuple[str, dict]]:
    if path.suffix == ".jsonl":
        for lineno, line in enumerate(read_lines(path), 1):
            if line.strip():
                yield f"{path}:{lineno}", parse_json(line, f"{path}:{lineno}", DATA_FIX)
        return
    try:
        import pyarrow.parquet as pq  # optional: only for users who supply parquet
    except ImportError as e:
        raise DataError(
            f"{path}: reading parquet needs pyarrow. Fix: `pip install pyarrow`, or convert "
            "the files to JSONL with fields id, document, summary."
        ) from e
    for i, rec in enumerate(pq.read_table(path, columns=["id", "document", "summary"]).to_pylist()):
        yield f"{path} row {i}", rec


_SECTION = re.compile(r"^\[SN\](URL|TITLE|FIRST-SENTENCE|RESTBODY)\[SN\]\s*$", re.M)


def _parse_summary_file(path: Path) -> tuple[str, str]:
    """Original XSum ``.summary`` format: ``[SN]FIRST-SENTENCE[SN]`` is the summary, ``[SN]RESTBODY[SN]``
    the document; lines are stripped, blank ones dropped, and joined with ``\\n`` (summary: spaces)."""
    text = read_text(path, DATA_FIX)
    parts = _SECTION.split(text)
    sections = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    if "FIRST-SENTENCE" not in sections or "RESTBODY" not in sections:
        raise DataError(
            f"{path}: not an XSum .summary file (needs [SN]FIRST-SENTENCE[SN] and [SN]RESTBODY[SN] sections)."
        )

    def lines(s: str) -> list[str]:
        return [ln.strip() for ln in s.splitlines() if ln.strip()]

    return "\n".join(lines(sections["RESTBODY"])), " ".join(lines(sections["FIRST-SENTENCE"]))


def full_splits(
    records: dict[str, tuple[str, str]], split_ids: dict[str, list[str]], gold: list[str], where: Path
) -> dict[str, list[Example]]:
    """Official train/validation/test in split-file order; every listed id must be present."""
    out: dict[str, list[Example]] = {}
    for name in FULL_SPLITS:
        missing = [i for i in split_ids[name] if i not in records]
        if missing:
            raise DataError(
                f"{where}: full XSum lacks {len(missing)} of {len(split_ids[name])} {name} ids "
                f"(e.g. {', '.join(missing[:3])}). Fix: supply the complete corpus."
            )
        exs = []
        for i, doc_id in enumerate(split_ids[name]):
            document, summary = records[doc_id]
            fields = {f"{name}_index": str(i)}
            if name == "test":
                fields["gold"] = gold[i]
                fields["test_index"] = str(i)
            exs.append(Example(id=doc_id, source=document, target=summary, fields=fields))
        out[name] = exs
    return out
