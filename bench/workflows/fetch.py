"""``bench fetch``: download (where there is internet) and check everything a system or a paper table needs.

Why: SLURM compute nodes often have no internet, so a paper table must not fail an hour into a job because
a backbone was never downloaded. What to fetch comes from the systems themselves, not a hand-kept list: the
registry builds each system at its budget (building loads no weights) and ``describe().backbone`` names its
checkpoint, so a new preset is fetchable the day it is added. Each file is checked after the download
(``config.json`` parses, the weights load, a tokenizer vocabulary is there, and every file hashes to what
the hub lists for it and to the project's pins), and a ``fetch-manifest.json`` beside the files records the
hub commit resolved at fetch time, so a later run (or a later ``bench fetch``) can say what it used.

With ``--data`` the full XSum corpus is fetched from its public hub copy into the data directory the harness
reads and checked against the split ids the harness pins (:func:`bench.data.xsum.check_full`).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bench.data.sources import sha256_file

if TYPE_CHECKING:
    from bench.api.checkpoints import RemoteFile

Status = Literal["fetched", "present", "would fetch", "failed", "no hub copy"]
#: statuses after which the item is usable (or, in a dry run, would be)
OK: tuple[Status, ...] = ("fetched", "present", "would fetch")
XSUM_LABEL = "xsum (full corpus)"
OFFLINE = "the hub is offline (HF_HUB_OFFLINE is set): unset it on a machine with internet"
_CHUNK = 1 << 20
#: backbone names of random models built without a checkpoint (smoke budgets; hf_seq2seq's tiny models)
RANDOM_MODELS = ("tiny", "tiny-bart", "tiny-bert2bert")


@dataclass(frozen=True)
class Need:
    """One checkpoint to have on this machine: its name as the systems say it, its hub repo (None: no public
    hub copy, ``manual`` says where it comes from) and who needs it (``encoder_bert@paper``)."""

    name: str
    hub_id: str | None
    wanted_by: tuple[str, ...] = ()
    manual: str = ""


@dataclass(frozen=True)
class Plan:
    """What a set of systems needs. ``nothing``: systems that need no checkpoint (and why: their backbone);
    ``skipped``: table rows whose system cannot be built at this budget; ``tasks``: the tasks of the rows."""

    needs: tuple[Need, ...] = ()
    nothing: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    tasks: frozenset[str] = frozenset()

    def __add__(self, other: Plan) -> Plan:
        needs: dict[str, Need] = {}
        for need in (*self.needs, *other.needs):
            old = needs.get(need.name)
            by = need.wanted_by if old is None else (*old.wanted_by, *(w for w in need.wanted_by
                                                                       if w not in old.wanted_by))
            needs[need.name] = replace(need, wanted_by=by)
        return Plan(tuple(needs.values()), (*self.nothing, *other.nothing), (*self.skipped, *other.skipped),
                    self.tasks | other.tasks)


@dataclass(frozen=True)
class Outcome:
    """One row of the fetch table: what, from where, what happened, where it lies, and why."""

    what: str
    source: str
    status: Status
    where: str
    detail: str = ""
    wanted_by: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.status in OK


# --- what the systems need -----------------------------------------------------------------------------------
def checkpoint_names(backbone: str, config: Mapping[str, Any]) -> list[str]:
    """The checkpoints a system loads, read off its ``describe()``.

    ``backbone`` (``SystemInfo.backbone``) is ``NAME``, ``NAME (a note)``, ``random:NAME`` (random init over
    NAME's config and vocabulary: NAME is still read) or ``bert2bert:NAME``; it names nothing to fetch when it
    is ``none…``, one of :data:`RANDOM_MODELS` or ``tiny(…)`` (random models over the offline vocabulary), or a
    ``… shape (…)`` built from a shape alone (timing only). A ``config['weights']`` that is a bare
    ``*.bin``/``*.safetensors`` file name (unilm-v1's ``unilm1-large-cased.bin``) is the checkpoint of that name
    (see :func:`bench.api.checkpoints.resolve_weights`).
    """
    label = backbone.strip()
    match = re.match(r"[^\s(]*", label)
    token = match.group(0) if match else ""
    for prefix in ("random:", "bert2bert:"):
        token = token.removeprefix(prefix)
    names = []
    random_model = token in RANDOM_MODELS or token.startswith("tiny(")
    if token and token != "none" and not random_model and " shape (" not in label:
        names.append(token)
    weights = config.get("weights")
    if isinstance(weights, str):
        path = Path(weights)
        if path.suffix in (".bin", ".safetensors") and path.parent == Path(".") and not path.exists():
            names.append(path.name[: -len(path.suffix)])
    return names


def plan_systems(items: Iterable[tuple[str, str, Mapping[str, Any]]]) -> Plan:
    """What each ``(system, budget, overrides)`` needs; an unknown system or bad override raises (user error)."""
    return _plan([(f"{system}@{budget}", system, budget, overrides) for system, budget, overrides in items],
                 strict=True)


def plan_table(paper: str, table: str, budget: str) -> Plan:
    """What every row of a paper table with a system at ``budget`` needs, rows marked unavailable included
    (their reason is often the missing weights this command fetches)."""
    from bench.papers import get_table

    tab = get_table(paper, table)
    items = []
    tasks: set[str] = set()
    for row in tab.rows:
        system = row.system_for(budget)
        if system is None:
            continue
        items.append((f"{tab.ref}/{row.id}", system, budget, dict(row.overrides)))
        tasks.update(t for g in tab.quality_groups() if (t := tab.task_split(row, g)[0]))
    return replace(_plan(items, strict=False), tasks=frozenset(tasks))


def plan_checkpoints(names: Iterable[str]) -> Plan:
    """Checkpoints asked for by name or hub id (``bench fetch --checkpoint``)."""
    from bench.api.checkpoints import NO_HUB_COPY, hub_id

    return Plan(tuple(Need(n, hub_id(n), ("--checkpoint",), NO_HUB_COPY.get(n, "")) for n in dict.fromkeys(names)))


def _plan(items: Sequence[tuple[str, str, str, Mapping[str, Any]]], *, strict: bool) -> Plan:
    from bench.api.checkpoints import NO_HUB_COPY, hub_id
    from bench.api.errors import UserError
    from systems import build

    needs: dict[str, list[str]] = {}
    nothing, skipped = [], []
    for label, system, budget, overrides in items:
        try:
            info = build(system, budget, dict(overrides)).describe()
        except (UserError, ValueError, KeyError) as exc:
            if strict:
                raise
            skipped.append(f"{label}: {_first_line(exc).split('. ')[0]}")
            continue
        names = checkpoint_names(info.backbone, info.config)
        if not names:
            nothing.append(f"{label}: {info.backbone}")
        for name in names:
            by = needs.setdefault(name, [])
            if label not in by:
                by.append(label)
    return Plan(tuple(Need(n, hub_id(n), tuple(by), NO_HUB_COPY.get(n, "")) for n, by in needs.items()),
                tuple(nothing), tuple(skipped))


# --- checkpoints -----------------------------------------------------------------------------------------------
def fetch_plan(plan: Plan, *, dry_run: bool = False, force: bool = False) -> list[Outcome]:
    return [fetch_checkpoint(need, dry_run=dry_run, force=force) for need in plan.needs]


def fetch_checkpoint(need: Need, *, dry_run: bool = False, force: bool = False) -> Outcome:
    """Have ``need`` on this machine and checked: ``present`` (found where the loader looks, and it checks out),
    ``fetched`` (downloaded and checked), ``would fetch`` (dry run), ``no hub copy`` or ``failed`` (with why)."""
    from bench.api import checkpoints as hub

    out = partial(Outcome, need.name, need.hub_id or "-", wanted_by=need.wanted_by)
    try:
        local = hub.find_local_checkpoint(need.name)
    except FileNotFoundError as exc:  # the offline minilm-l6 package is not installed
        return out("failed", "-", str(exc))
    if local is not None and not (force and need.hub_id):
        if dry_run:
            return out("present", str(local), "not checked (dry run)")
        problems, detail = check_present(local, need.hub_id)
        if problems:
            again = (f" Fix: `bench fetch --checkpoint {need.name} --force` downloads it again."
                     if need.hub_id else "")
            return out("failed", str(local), "; ".join(problems) + "." + again)
        return out("present", str(local), detail)
    if need.hub_id is None:
        if Path(need.name).expanduser().is_absolute() or need.name.startswith((".", "~")):
            return out("failed", need.name, "no such directory")
        return out("no hub copy", "-", need.manual or (
            f"no public hub copy is known: put config.json, the weights and vocab.txt in "
            f"$BENCH_CHECKPOINTS/{need.name}"))
    dest = hub.checkpoint_destination(need.name)
    where = str(dest) if dest else f"HF cache ({hub.hf_cache_dir()})"
    pin = hub.PINNED.get(need.hub_id)
    if dry_run:
        return out("would fetch", where, f"{pin.revision if pin else 'main'} from {hub.hub_endpoint()}")
    if hub.hub_offline():
        return out("failed", where, OFFLINE)
    try:
        dl = hub.download_checkpoint(need.name, force=force)
    except MemoryError:
        return out("failed", where, "ran out of memory while fetching it. Fix: free memory and re-run "
                                    f"`bench fetch --checkpoint {need.name}`")
    except Exception as exc:  # no network, no such repo, a repo without weights: each is one row, not a crash
        return out("failed", where, _first_line(exc))
    hashes, problems = check_hashes(dl.path, dl.files)
    problems += check_contents(dl.path)
    problems += check_pins(dl.hub_id, dl.commit, hashes)
    if problems:
        return out("failed", str(dl.path), "; ".join(problems))
    write_manifest(dl.path, {"kind": "checkpoint", "name": dl.name, "hub_id": dl.hub_id, "endpoint": dl.endpoint,
                             "revision": dl.revision, "commit": dl.commit, "files": hashes})
    size = sum(h["size"] for h in hashes.values())
    return out("fetched", str(dl.path), f"commit {dl.commit[:12]} ({dl.revision}), {len(hashes)} files, "
                                        f"{_size(size)}, hashes match the hub's" + _redirects(dl.redirected_to))


def _redirects(hosts: Sequence[str]) -> str:
    """The part of a row that names the hosts a download was redirected to (another host than the one asked)."""
    return f"; redirected to {', '.join(hosts)}" if hosts else ""


def check_present(path: Path, hub: str | None) -> tuple[list[str], str]:
    """(problems, detail) of a checkpoint found on this machine: its contents, its files against the manifest
    of the fetch that put them there (when there is one), and the project's pins."""
    from bench.api.checkpoints import PINNED

    problems = check_contents(path)
    manifest = read_manifest(path)
    hashes: dict[str, dict[str, Any]] = {}
    for rel, rec in (manifest or {}).get("files", {}).items():
        file = path / rel
        if not file.is_file():
            problems.append(f"{rel} missing (listed in {file.parent / 'fetch-manifest.json'})")
            continue
        sha = sha256_file(file)
        hashes[rel] = {"size": file.stat().st_size, "sha256": sha}
        if sha != rec.get("sha256"):
            recorded = str(rec.get("sha256"))[:12]
            problems.append(f"{rel}: sha256 {sha[:12]}…, but the fetch manifest recorded {recorded}… "
                            "(the file changed after it was fetched)")
    pin = PINNED.get(hub) if hub else None
    for rel in pin.sha256 if pin else ():
        if rel not in hashes and (path / rel).is_file():
            hashes[rel] = {"size": (path / rel).stat().st_size, "sha256": sha256_file(path / rel)}
    problems += check_pins(hub, manifest.get("commit") if manifest else None, hashes)
    if manifest:
        detail = (f"commit {str(manifest.get('commit'))[:12]} ({manifest.get('revision')}), fetched "
                  f"{manifest.get('fetched_at', '?')}; {len(hashes)} files match the fetch manifest")
    else:
        detail = "no fetch manifest (not put there by `bench fetch`); config, weights and vocab check out"
    return problems, detail


def check_contents(path: Path) -> list[str]:
    """What keeps the loaders from reading ``path``: ``config.json`` must parse, every weights file must load
    (safetensors; a ``.bin`` only through ``torch.load(weights_only=True)``), a tokenizer vocabulary must exist."""
    from bench.api.checkpoints import VOCAB_FILES, VOCAB_SUFFIX, WEIGHT_SUFFIXES, checkpoint_files

    problems = []
    cfg = path / "config.json"
    try:
        if not isinstance(json.loads(cfg.read_text(encoding="utf-8")), dict):
            problems.append("config.json is not a JSON object")
    except FileNotFoundError:
        problems.append("config.json missing")
    except (ValueError, OSError, RecursionError) as exc:
        problems.append(f"config.json does not parse ({_first_line(exc)})")
    names = [p.name for p in path.iterdir() if p.is_file()]
    weights = [w for w in checkpoint_files(names) if w.endswith(WEIGHT_SUFFIXES)]
    if not weights:
        problems.append("no weights (model.safetensors or pytorch_model.bin)")
    for name in weights:
        try:
            load_weights(path / name)
        except Exception as exc:  # a truncated or altered file: safetensors/torch say why in their own words
            problems.append(f"{name} does not load ({_first_line(exc)})")
    if not any(n in VOCAB_FILES or n.endswith(VOCAB_SUFFIX) for n in names):
        problems.append(f"no tokenizer vocabulary ({', '.join(VOCAB_FILES)})")
    return problems


def load_weights(path: Path) -> int:
    """Read every tensor of a weights file (the check that it loads); returns how many there are."""
    if path.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as f:
            keys = list(f.keys())
            for key in keys:
                f.get_tensor(key)
        return len(keys)
    import torch

    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict):
        raise ValueError(f"expected a state dict, got {type(state).__name__}")
    return len(state)


def check_hashes(base: Path, files: Iterable[RemoteFile]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Compare downloaded files with the hub's listing: the sha256 of LFS files (weights, data), the git blob id
    of the others. Returns ``{path: {size, sha256}}`` (the manifest's ``files``) and the problems."""
    hashes: dict[str, dict[str, Any]] = {}
    problems = []
    for remote in files:
        file = base / remote.path
        if not file.is_file():
            problems.append(f"{remote.path} missing after the download")
            continue
        size = file.stat().st_size
        sha, blob = _hashes(file, size)
        hashes[remote.path] = {"size": size, "sha256": sha}
        if size != remote.size:
            problems.append(f"{remote.path}: {size:,} bytes, the hub lists {remote.size:,}")
        elif remote.sha256 is not None and sha != remote.sha256:
            problems.append(f"{remote.path}: sha256 {sha[:12]}…, the hub lists {remote.sha256[:12]}…")
        elif remote.sha256 is None and blob != remote.blob_id:
            problems.append(f"{remote.path}: git blob id {blob[:12]}…, the hub lists {remote.blob_id[:12]}…")
    return hashes, problems


def check_pins(hub: str | None, commit: str | None, hashes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Differences from the project's pin of ``hub`` (bench.api.checkpoints.PINNED): the commit, and the
    sha256 of each pinned file."""
    from bench.api.checkpoints import PINNED

    pin = PINNED.get(hub) if hub else None
    if pin is None:
        return []
    problems = []
    if commit is not None and re.fullmatch(r"[0-9a-f]{40}", pin.revision) and commit != pin.revision:
        problems.append(f"commit {commit[:12]}, but the project pins {hub} at {pin.revision[:12]}")
    for rel, want in pin.sha256.items():
        got = hashes.get(rel, {}).get("sha256")
        if got is None:
            problems.append(f"{rel} (pinned) missing")
        elif got != want:
            problems.append(f"{rel}: sha256 {got[:12]}…, the project pins {want[:12]}…")
    return problems


# --- the XSum corpus -----------------------------------------------------------------------------------------
def fetch_xsum(data_dir: Path | str | None = None, *, dry_run: bool = False, force: bool = False) -> Outcome:
    """Have the full XSum corpus where the harness reads it (``$BENCH_XSUM``, else ``<data dir>/xsum/full``),
    downloaded from the hub copy's data files and checked against the pinned split ids."""
    from bench.api import checkpoints as hub
    from bench.api.errors import DataError
    from bench.data.sources import data_dir as find_data_dir
    from bench.data.xsum import HUB_DATASET, HUB_REVISIONS, full_destination

    out = partial(Outcome, XSUM_LABEL, HUB_DATASET, wanted_by=("--data",))
    try:
        root = find_data_dir(data_dir)
    except DataError as exc:
        return out("failed", "-", " ".join(str(exc).split()))
    dest = full_destination(root)
    if not force and any(_corpus_files(dest)):
        if dry_run:
            return out("present", str(dest), "not checked (dry run)")
        return _checked_xsum(root, dest, out, "present", read_manifest(dest))
    if dry_run:
        return out("would fetch", str(dest),
                   f"data files of {' or '.join(HUB_REVISIONS)} from {hub.hub_endpoint()}")
    if hub.hub_offline():
        return out("failed", str(dest), OFFLINE)
    try:
        found = _xsum_data_files()
        if found is None:
            return out("failed", str(dest), (
                f"{HUB_DATASET} has no *.parquet or *.jsonl data files on {' or '.join(HUB_REVISIONS)} (its main "
                "branch may hold only a loading script): get the corpus from github.com/EdinburghNLP/XSum and put "
                f"*.jsonl/*.parquet files with id, document, summary (or the bbc-summary-data folder) in {dest}"))
        revision, commit, files = found
        hosts = hub.download_files(HUB_DATASET, commit, files, dest, repo_type="dataset", force=force)
    except MemoryError:
        return out("failed", str(dest), "ran out of memory while fetching it. Fix: free memory and re-run "
                                        "`bench fetch --data`")
    except Exception as exc:  # no network, repo moved: one row, not a crash
        return out("failed", str(dest), _first_line(exc))
    hashes, problems = check_hashes(dest, files)
    if problems:
        return out("failed", str(dest), "; ".join(problems))
    manifest = {"kind": "dataset", "hub_id": HUB_DATASET, "endpoint": hub.hub_endpoint(), "revision": revision,
                "commit": commit, "files": hashes}
    row = _checked_xsum(root, dest, out, "fetched", manifest, write=True)
    return replace(row, detail=row.detail + _redirects(hosts)) if row.ok else row


def _xsum_data_files() -> tuple[str, str, list[RemoteFile]] | None:
    """(revision, commit, data files) of the first revision of the hub copy that has data files."""
    from huggingface_hub.errors import RevisionNotFoundError

    from bench.api.checkpoints import remote_files
    from bench.data.xsum import DATA_SUFFIXES, HUB_DATASET, HUB_REVISIONS

    for revision in HUB_REVISIONS:
        try:
            commit, listing = remote_files(HUB_DATASET, revision, repo_type="dataset")
        except RevisionNotFoundError:
            continue
        files = [f for f in listing if f.path.endswith(DATA_SUFFIXES)]
        if files:
            return revision, commit, files
    return None


def _checked_xsum(root: Path, dest: Path, out: Any, status: Status, manifest: dict[str, Any] | None,
                  write: bool = False) -> Outcome:
    from bench.api.errors import DataError
    from bench.data.xsum import check_full

    problems = []
    if manifest and not write:  # present: the files must still be the ones fetched
        for rel, rec in manifest.get("files", {}).items():
            file = dest / rel
            if not file.is_file() or sha256_file(file) != rec.get("sha256"):
                problems.append(f"{rel} changed or missing since it was fetched")
    try:
        check = check_full(root, dest)
    except DataError as exc:
        problems.append(" ".join(str(exc).split()))
    if problems:
        return out("failed", str(dest), "; ".join(problems) + ". Fix: `bench fetch --data --force`.")
    if write and manifest is not None:
        write_manifest(dest, {**manifest, "counts": check.counts, "test_matching_gold": check.test_matching_gold})
    counts = " / ".join(f"{name} {n:,}" for name, n in check.counts.items())
    test = check.counts.get("test", 0)
    return out(status, str(dest), f"{counts}: every id of the pinned split file; {check.test_matching_gold:,} of "
                                  f"{test:,} test summaries match their gold line")


def _corpus_files(dest: Path) -> Iterable[Path]:
    if not dest.is_dir():
        return
    for pattern in ("*.parquet", "*.jsonl", "*.summary"):
        for path in dest.rglob(pattern):
            if ".cache" not in path.relative_to(dest).parts:
                yield path


# --- manifest and hashing --------------------------------------------------------------------------------------
def write_manifest(directory: Path, record: Mapping[str, Any]) -> Path:
    """``fetch-manifest.json`` beside the fetched files (atomic), stamped with the time and the harness version."""
    from bench.api.atomic import write_json_atomic
    from bench.api.checkpoints import MANIFEST
    from bench.version import __version__

    path = directory / MANIFEST
    write_json_atomic(path, {**record, "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                             "harness": f"bench {__version__}"})
    return path


def read_manifest(directory: Path) -> dict[str, Any] | None:
    """The fetch manifest in ``directory``, or None when it has none (or an unreadable one)."""
    from bench.api.checkpoints import MANIFEST

    try:
        data = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _hashes(path: Path, size: int) -> tuple[str, str]:
    """(sha256, git blob sha1) in one pass: the hub vouches for LFS files by the first, others by the second."""
    sha = hashlib.sha256()
    blob = hashlib.sha1(f"blob {size}\0".encode())
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            sha.update(chunk)
            blob.update(chunk)
    return sha.hexdigest(), blob.hexdigest()


def _first_line(exc: BaseException) -> str:
    text = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    return f"{exc.__class__.__name__}: {text[:300]}" if text else exc.__class__.__name__


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024 or unit == "GB":
            break
    return f"{size:.1f} {unit}"
