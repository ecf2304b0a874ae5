"""``load_split`` / ``build`` / ``verify``: raw files -> checked, cached ``Split`` values.

A load is fast when the cache is fresh (stat the raw files, hash the cache file, parse JSONL) and
rebuilds otherwise; every build first checks the raw files against ``SHA256SUMS`` and then checks
each split's count (and pinned content hash) against the task definition, so a cached split is
known to be the one its task version names.
"""

from __future__ import annotations

import hashlib
import importlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.api.errors import DataError
from bench.api.tasks import Built, SplitSpec, Task
from bench.api.types import Example, Split, encode
from bench.data import cache
from bench.data.sources import SUMS_FILE, data_dir, needed, present, sha256_file, verify_raw
from bench.data.tasks import TASKS

MANIFEST = "manifest.json"
LOCK = ".build.lock"


def default_eval_split(task: str, data_dir: Path | str | None = None) -> str:
    """The split a run scores when none is named: ``test``, or, where the full test set needs data
    the user has not supplied (XSum), the largest available partial test split (named as partial)."""
    t = _task(task)
    spec = t.split("test")
    if not spec.optional:
        return "test"
    if split_missing(t.name, "test", data_dir) is None:
        return "test"
    candidates = [s for s in t.splits.values() if s.name.startswith("test") and not s.references_only
                  and split_missing(t.name, s.name, data_dir) is None]
    if not candidates:
        raise DataError(split_missing(t.name, "test", data_dir) or f"Task '{t.name}' has no test split here.")
    return max(candidates, key=lambda s: s.count).name


def split_missing(task: str, split: str, data_dir: Path | str | None = None) -> str | None:
    """Why split ``split`` of ``task`` cannot be built here (one line naming the file and the fix), or None when
    its sources are here. Only optional splits can be missing (XSum's: the full corpus, or the recovered
    documents)."""
    t = _task(task)
    if not t.split(split).optional:
        return None
    from bench.data.xsum import unavailable  # only XSum has optional splits

    return unavailable(_root_for(t, data_dir), split)


def training_data_missing(task: str, data_dir: Path | str | None = None) -> str | None:
    """One line saying that ``task``'s training data is not on this machine and how to get it, or None when it is
    (only XSum has optional splits: its full corpus is the user's)."""
    t = _task(task)
    if "train" not in t.splits or not t.split("train").optional:
        return None
    from bench.data.xsum import find_full, training_missing_message

    root = _root_for(t, data_dir)
    return None if find_full(root) is not None else training_missing_message(root)


def load_split(
    task: str, split: str, data_dir: Path | str | None = None, *, cache_dir: Path | str | None = None
) -> Split:
    """Return split ``split`` of ``task``, building (and caching) it if missing or stale."""
    t = _task(task)
    spec = t.split(split)
    root = _root_for(t, data_dir)
    tdir = cache.task_cache_dir(cache.cache_root(cache_dir), t.name, t.version)
    if spec.optional:
        from bench.data.xsum import unavailable  # only XSum has optional splits

        if (why := unavailable(root, split)) is not None:
            raise DataError(why)
    manifest = _fresh_manifest(t, root, tdir)
    if manifest is None or split not in manifest["splits"]:
        tdir.mkdir(parents=True, exist_ok=True)
        with _lock(tdir):  # another process may have built it while we waited
            manifest = _fresh_manifest(t, root, tdir)
            if manifest is None or split not in manifest["splits"]:
                manifest = _build(t, root, tdir)
    if split not in manifest["splits"]:
        raise DataError(f"Task '{t.name}' built no split '{split}' from {root}.")
    entry = manifest["splits"][split]
    _check_pinned(t, spec, tdir, entry)
    # a pinned split is read from its JSONL, whose hash is compared with the pin: the marshal sidecar's hash is
    # only in the manifest, which can be edited into agreement with a rewritten sidecar
    examples = _read_fast(tdir, entry) if spec.sha256 is None else None
    if examples is None:
        path = tdir / entry["file"]
        data = path.read_bytes() if path.is_file() else b""
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            manifest = _build(t, root, tdir)  # cache file damaged or replaced: rebuild once
            entry = manifest["splits"][split]
            data = path.read_bytes()
        examples = cache.decode(data, path)
    path = tdir / entry["file"]
    if len(examples) != spec.count:
        raise DataError(
            f"{path}: {len(examples)} examples, task '{t.name}' v{t.version} expects "
            f"{spec.count}. Fix: delete {tdir} and load again."
        )
    return Split(
        task=t.name,
        name=split,
        examples=tuple(examples),
        sha256=entry["sha256"],
        partial=spec.partial,
        note=spec.note,
    )


def build(
    task: str, data_dir: Path | str | None = None, *, cache_dir: Path | str | None = None
) -> dict[str, int]:
    """(Re)build every split of ``task`` the available data allows; return ``{split: count}``."""
    t = _task(task)
    root = _root_for(t, data_dir)
    tdir = cache.task_cache_dir(cache.cache_root(cache_dir), t.name, t.version)
    manifest = _build(t, root, tdir)
    return {name: entry["count"] for name, entry in manifest["splits"].items()}


def verify(
    task: str, data_dir: Path | str | None = None, *, cache_dir: Path | str | None = None
) -> dict[str, int]:
    """Re-hash the raw files and every cached split; raise ``DataError`` naming the first bad file.

    Missing or stale caches are rebuilt (which re-checks counts and pinned hashes). Returns the
    verified ``{split: count}``.
    """
    t = _task(task)
    root = _root_for(t, data_dir)
    verify_raw(root, t.raw_files)
    tdir = cache.task_cache_dir(cache.cache_root(cache_dir), t.name, t.version)
    manifest = _fresh_manifest(t, root, tdir) or _build(t, root, tdir)
    counts = {}
    for name, entry in manifest["splits"].items():
        spec = t.split(name)
        path = tdir / entry["file"]
        if not path.is_file():
            raise DataError(f"Cached split {path} is missing. Fix: run `bench data build {t.name}`.")
        data = path.read_bytes()
        actual = hashlib.sha256(data).hexdigest()
        expected = [h for h in (entry["sha256"], spec.sha256) if h]
        if any(actual != h for h in expected):
            raise DataError(
                f"Cached split {path} has sha256 {actual}, expected {expected[-1]}. Fix: delete "
                f"{tdir} and run `bench data build {t.name}`."
            )
        n = data.count(b"\n")
        if n != entry["count"] or n != spec.count:
            raise DataError(f"Cached split {path} has {n} examples, expected {spec.count}.")
        _verify_fast(tdir, entry, data)
        counts[name] = n
    return counts


def _check_pinned(t: Task, spec: SplitSpec, tdir: Path, entry: dict[str, Any]) -> None:
    """Refuse a cached split whose manifest names another hash than the one the task pins in code: the manifest
    and the cache file beside it were rewritten together (a stale build of an older task version never gets
    here: :func:`_fresh_manifest` rebuilds it). The cache file itself is then hashed against the manifest's
    hash, so the pinned hash is what the loaded examples have."""
    if spec.sha256 is not None and entry.get("sha256") != spec.sha256:
        raise DataError(
            f"{tdir / MANIFEST}: split '{spec.name}' is recorded with sha256 {entry.get('sha256')}, but task "
            f"'{t.name}' v{t.version} pins {spec.sha256} (bench/data/tasks.py): the cached split "
            f"{tdir / str(entry.get('file'))} was replaced. Fix: delete {tdir}; the next load rebuilds it from the "
            "checksummed raw files."
        )


def _verify_fast(tdir: Path, entry: dict[str, Any], jsonl: bytes) -> None:
    """The marshal sidecar must hold exactly the JSONL's examples (loads trust it when its hash fits)."""
    fast = entry.get("fast")
    path = tdir / fast["file"] if fast else None
    if path is None or not path.is_file():
        return  # loads fall back to the (verified) JSONL
    examples = _read_fast(tdir, entry)
    if examples is not None and encode(examples) != jsonl:
        raise DataError(
            f"Cached split sidecar {path} does not match {tdir / entry['file']}. Fix: delete {tdir} and "
            "load again to rebuild."
        )


def _read_fast(tdir: Path, entry: dict[str, Any]) -> list[Example] | None:
    """The split from its marshal sidecar if present and intact, else None (use the JSONL)."""
    fast = entry.get("fast")
    if not fast or fast.get("version") != cache.FAST_VERSION:
        return None
    path = tdir / fast["file"]
    if not path.is_file():
        return None
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != fast["sha256"]:
        return None
    try:
        return cache.decode_fast(data)
    except (ValueError, EOFError, TypeError):
        return None


def _lock(tdir: Path) -> Any:
    """One lock per task cache dir; re-entrant so a build inside a held lock does not deadlock."""
    from filelock import FileLock  # imported here: `import bench` must stay instant

    return FileLock(str(tdir / LOCK), is_singleton=True)


def _task(name: str) -> Task:
    try:
        return TASKS.get(name)
    except KeyError as e:
        raise DataError(str(e)) from None


def _data_dir(explicit: Path | str | None) -> Path:
    return data_dir(explicit)


def _root_for(t: Task, explicit: Path | str | None) -> Path:
    """Where ``t``'s raw files are: the folder the task ships (plugins), else the shared data directory."""
    return Path(t.data_root) if t.data_root is not None else _data_dir(explicit)


def _fresh_manifest(t: Task, root: Path, tdir: Path) -> dict[str, Any] | None:
    """The manifest if the cache was built by this task version from identical raw files, else None."""
    manifest = cache.read_manifest(tdir / MANIFEST)
    if manifest is None or manifest.get("task") != t.name or manifest.get("version") != t.version:
        return None
    sources = manifest.get("sources", {})
    if {present(root, spec) for spec in needed(root, t.raw_files)} - set(sources):
        return None  # a file is missing from the build, or an optional one appeared since
    for rel, rec in sources.items():
        path = Path(rec["path"]) if rec.get("extra") else root / rel
        if not path.is_file():
            return None
        st = path.stat()
        if (st.st_size, st.st_mtime_ns) == (rec["size"], rec["mtime_ns"]):
            continue  # unchanged since the build (a different copy with equal bytes is hashed below)
        if st.st_size != rec["size"] or sha256_file(path) != rec["sha256"]:
            return None
    if _full_xsum_appeared(t, root, manifest):
        return None
    return manifest


def _full_xsum_appeared(t: Task, root: Path, manifest: dict[str, Any]) -> bool:
    """A user who adds a full XSum after a partial build must get the full splits on next load."""
    has_optional = any(s.optional for s in t.splits.values())
    if not has_optional or any(rec.get("extra") for rec in manifest["sources"].values()):
        return False
    from bench.data.xsum import find_full

    return find_full(root) is not None


def _build(t: Task, root: Path, tdir: Path) -> dict[str, Any]:
    tdir.mkdir(parents=True, exist_ok=True)
    with _lock(tdir):
        started = time.perf_counter()
        raw = verify_raw(root, t.raw_files)
        module_name, attr = t.builder.split(":")
        builder: Callable[[Task, Path], Built] = getattr(importlib.import_module(module_name), attr)
        built = builder(t, root)
        sources = {rel: _source_record(root / rel, sha) for rel, sha in raw.items()}
        for rel, path in built.extra_sources.items():
            sources[rel] = {**_source_record(path, sha256_file(path)), "extra": True, "path": str(path)}
        splits: dict[str, Any] = {}
        for spec in t.splits.values():
            examples = built.splits.get(spec.name)
            if examples is None:
                if not spec.optional:
                    raise DataError(f"Builder {t.builder} produced no split '{spec.name}' for '{t.name}'.")
                continue
            if len(examples) != spec.count:
                raise DataError(
                    f"Task '{t.name}' split '{spec.name}': built {len(examples)} examples, "
                    f"expected {spec.count}. The raw data in {root} is not the expected release."
                )
            data = encode(examples)
            sha = hashlib.sha256(data).hexdigest()
            alternatives = [f"{present(root, r)} (instead of {r.split('|')[0]})" for r in t.raw_files
                            if present(root, r) != r.removesuffix("?").split("|")[0]]
            if spec.sha256 and sha != spec.sha256 and alternatives:
                raise DataError(
                    f"Task '{t.name}' split '{spec.name}' built from {', '.join(alternatives)} has sha256 {sha}, "
                    f"not the pinned {spec.sha256}: that file's examples differ from the ones the pin was made "
                    "from (docs/data.md, 'Data from its public sources'). Fix: use the other file."
                )
            if spec.sha256 and sha != spec.sha256:
                raise DataError(
                    f"Task '{t.name}' v{t.version} split '{spec.name}' built from {root} has sha256 {sha}, but "
                    f"the task pins {spec.sha256} (bench/data/tasks.py), so these are not the examples it names. "
                    f"Fix: restore the raw files and {root / SUMS_FILE} from their source "
                    f"(see {root / 'README.md'}); a SHA256SUMS that lists other hashes than the source's was "
                    "edited. The pin is right unless the split's builder was changed on purpose, which makes a new "
                    "task version with its own pin."
                )
            file, fast_file = f"{spec.name}.jsonl", f"{spec.name}.marshal"
            cache.atomic_write(tdir / file, data)
            fast = cache.encode_fast(examples)
            cache.atomic_write(tdir / fast_file, fast)
            splits[spec.name] = {
                "file": file,
                "count": len(examples),
                "sha256": sha,
                "partial": spec.partial,
                "note": spec.note,
                "fast": {
                    "file": fast_file,
                    "version": cache.FAST_VERSION,
                    "sha256": hashlib.sha256(fast).hexdigest(),
                },
            }
        manifest = {
            "format": cache.FORMAT,
            "task": t.name,
            "version": t.version,
            "data_dir": str(root),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.perf_counter() - started, 3),
            "sources": sources,
            "splits": splits,
        }
        cache.write_manifest(tdir / MANIFEST, manifest)
        return manifest


def _source_record(path: Path, sha: str) -> dict[str, Any]:
    st = path.stat()
    return {"sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
