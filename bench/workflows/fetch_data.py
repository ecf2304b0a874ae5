"""``bench fetch --data``: every built-in task's raw files from their public sources into the data directory.

Why this shape: each download goes to ``NAME.part`` beside its target (resumed with an HTTP Range request
when a previous try left one), is hashed while it streams, and is renamed into place only once its sha256
(or the sha256 of every file made from it) matches the pin, so an interrupted or altered download never
lands. Files already present with the pinned hash are skipped, so the command is safe to re-run. The data
directory's ``SHA256SUMS`` gets a line for each file that lands, which is what the split builders verify.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.api.atomic import write_bytes_atomic
from bench.api.errors import DataError
from bench.data.public_sources import MIRROR_ENV, Output, Source, catalogue
from bench.data.sources import ENV_VAR, SUMS_FILE, default_data_dir, sha256_file
from bench.workflows.fetch import Outcome

#: (label, bytes so far, total bytes or None): how a caller draws progress
Progress = Callable[[str, int, int | None], None]
CACHE = ".fetch"  # downloads whose own hash is unknown wait here (chunks, archives) between runs
_CHUNK = 1 << 16
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Planned:
    """One row of ``--dry-run``: a URL (or a pattern for many chunks) and where its files land."""

    url: str
    where: str
    source: Source


def target_dir(explicit: Path | str | None = None) -> Path:
    """Where fetched data goes: ``--data-dir`` > ``$BENCH_DATA`` > ``<repo>/../shared/data``; unlike the readers'
    lookup the directory need not exist yet (it is created)."""
    env = os.environ.get(ENV_VAR) or None
    chosen = explicit if explicit not in (None, "") else env
    return Path(chosen).expanduser().resolve() if chosen else default_data_dir()


def plan(sources: Sequence[Source] | None = None, mirror: str | None = None) -> list[Planned]:
    """URL → path for every source; a chunked source is one row with its first and last chunk."""
    rows = []
    for src in sources if sources is not None else catalogue():
        urls = src.urls(mirror)
        url = urls[0] if len(urls) == 1 else f"{urls[0]} … {urls[-1].rsplit('/', 1)[-1]} ({len(urls)} files)"
        rows.append(Planned(url, ", ".join(o.rel for o in src.outputs), src))
    return rows


def fetch_data(root: Path, sources: Sequence[Source] | None = None, *, mirror: str | None = None,
               dry_run: bool = False, force: bool = False, progress: Progress | None = None) -> list[Outcome]:
    """Have every output of ``sources`` (default: :func:`catalogue`) in ``root`` with its pinned sha256; one
    :class:`Outcome` per source. A failure is one row naming the URL and the fix, never an exception."""
    outcomes = []
    for row in plan(sources, mirror):
        src = row.source
        row = Planned(row.url, ", ".join(str(root / o.rel) for o in src.outputs), src)
        if dry_run:
            present = all(_has(root, o) for o in src.outputs)
            outcomes.append(Outcome(src.name, row.url, "present" if present else "would fetch", row.where,
                                    src.note or f"pinned: {src.origin}"))
            continue
        if not force and all(_has(root, o) for o in src.outputs):
            outcomes.append(Outcome(src.name, row.url, "present", row.where, "sha256 matches the pin"))
            continue
        try:
            _fetch(root, src, src.urls(mirror), force=force, progress=progress)
        except DataError as exc:
            outcomes.append(Outcome(src.name, row.url, "failed", row.where, " ".join(str(exc).split())))
            continue
        add_sums(root, {o.rel: o.sha256 for o in src.outputs})
        outcomes.append(Outcome(src.name, row.url, "fetched", row.where, "sha256 matches the pin"))
    return outcomes


def add_sums(root: Path, pins: dict[str, str]) -> None:
    """Record ``pins`` in ``root/SHA256SUMS`` (``sha256sum -c`` format), keeping the other lines."""
    path = root / SUMS_FILE
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    kept = [ln for ln in lines if ln.split(None, 1)[-1].lstrip("*").removeprefix("./").strip() not in pins]
    kept += [f"{sha}  ./{rel}" for rel, sha in pins.items()]
    write_bytes_atomic(path, ("\n".join(sorted(kept, key=lambda ln: ln.split(None, 1)[-1])) + "\n").encode())


def _has(root: Path, out: Output) -> bool:
    path = root / out.rel
    return path.is_file() and sha256_file(path) == out.sha256


def _fetch(root: Path, src: Source, urls: list[str], *, force: bool, progress: Progress | None) -> None:
    if src.kind == "file":
        out = src.outputs[0]
        _download(urls[0], root / out.rel, out.sha256, force=force, progress=progress)
        return
    cache = root / CACHE / src.name
    files = [_download(u, cache / u.rsplit("/", 1)[-1], None, force=force, progress=progress) for u in urls]
    made = _decode_chunked(files) if src.kind == "chunked" else _members(files[0], src.outputs)
    for out in src.outputs:
        data = made.get(out.member)
        if data is None:
            raise DataError(f"{urls[0]} holds no {out.member} for {out.rel}. Fix: check the pinned commit in "
                            "bench/data/public_sources.py, or put the file there by hand.")
        got = hashlib.sha256(data).hexdigest()
        if got != out.sha256:
            raise DataError(f"{out.rel} made from {urls[0]} has sha256 {got[:12]}…, the project pins "
                            f"{out.sha256[:12]}…. Fix: `bench fetch --data --force` downloads it again; if it "
                            "persists the upstream files changed.")
    for out in src.outputs:
        write_bytes_atomic(root / out.rel, made[out.member])
    shutil.rmtree(cache, ignore_errors=True)
    with contextlib.suppress(OSError):  # the last source's cache gone: no empty folder left
        cache.parent.rmdir()


def _download(url: str, dest: Path, sha256: str | None, *, force: bool, progress: Progress | None) -> Path:
    """``url`` to ``dest`` through ``dest.part`` (resumed when present); with ``sha256`` it must match before the
    rename. Returns ``dest``; an existing ``dest`` without a pin is kept unless ``force``."""
    if dest.is_file() and not force and (sha256 is None or sha256_file(dest) == sha256):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    if force:
        part.unlink(missing_ok=True)
    have = part.stat().st_size if part.is_file() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as resp:
            resumed = bool(have) and resp.status == 206
            total = resp.length + (have if resumed else 0) if resp.length is not None else None
            done = have if resumed else 0
            with open(part, "ab" if resumed else "wb") as f:
                while chunk := resp.read(_CHUNK):
                    f.write(chunk)
                    done += len(chunk)
                    if progress:
                        progress(dest.name, done, total)
    except urllib.error.HTTPError as exc:
        if not (exc.code == 416 and have):  # 416 with a .part: it is already whole
            raise DataError(f"{url}: HTTP {exc.code} {exc.reason}. Fix: check the URL (or ${MIRROR_ENV}) and "
                            "re-run `bench fetch --data`.") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataError(f"{url}: {reason}. Fix: run `bench fetch --data` where there is internet (or set "
                        f"${MIRROR_ENV} to a mirror); it resumes where it stopped.") from exc
    if sha256 is not None:
        got = sha256_file(part)
        if got != sha256:
            part.unlink(missing_ok=True)
            raise DataError(f"{url}: sha256 {got[:12]}…, the project pins {sha256[:12]}…; nothing was kept. "
                            "Fix: re-run `bench fetch --data`; if it persists the upstream file changed.")
    os.replace(part, dest)
    return dest


def _decode_chunked(files: Iterable[Path]) -> dict[str, bytes]:
    """``SPLIT.src``/``SPLIT.tgt`` texts from chunk files named ``SPLIT_NNN.bin``, chunks in name order."""
    from bench.data.chunked import pair, records

    lines: dict[str, list[str]] = {}
    for path in sorted(files, key=lambda p: p.name):
        split = path.name.rsplit("_", 1)[0]
        for features in records(path):
            src, tgt = pair(features)
            lines.setdefault(f"{split}.src", []).append(src)
            lines.setdefault(f"{split}.tgt", []).append(tgt)
    return {name: ("\n".join(text) + "\n").encode("utf-8") for name, text in lines.items()}


def _members(archive: Path, outputs: Sequence[Output]) -> dict[str, bytes]:
    """The archive members for ``outputs``: by base name, else the member whose bytes have the pinned hash."""
    wanted = {o.member for o in outputs}
    by_hash = {o.sha256: o.member for o in outputs}
    found: dict[str, bytes] = {}
    try:
        with tarfile.open(archive, "r:*") as tar:
            for info in tar:
                if not info.isfile():
                    continue
                handle = tar.extractfile(info)
                if handle is None:
                    continue
                data = handle.read()
                name = info.name.rsplit("/", 1)[-1]
                if name in wanted and name not in found:
                    found[name] = data
                elif (member := by_hash.get(hashlib.sha256(data).hexdigest())) and member not in found:
                    found[member] = data
    except (tarfile.TarError, EOFError, OSError) as exc:
        archive.unlink(missing_ok=True)
        raise DataError(f"{archive}: not a readable tar archive ({exc}); removed. Fix: re-run "
                        "`bench fetch --data`.") from exc
    return found


def fetch_everything(data_dir: Path | str | None = None, *, mirror: str | None = None, dry_run: bool = False,
                     force: bool = False, progress: Progress | None = None) -> list[Outcome]:
    """What ``bench fetch --data`` does: the public raw files (:func:`fetch_data`), then the full XSum corpus
    from its hub copy (:func:`bench.workflows.fetch.fetch_xsum`), which is checked against the split file
    fetched first."""
    from bench.data.xsum import HUB_DATASET, full_destination
    from bench.workflows.fetch import XSUM_LABEL, fetch_xsum

    root = target_dir(data_dir)
    if not dry_run:
        root.mkdir(parents=True, exist_ok=True)
    outcomes = fetch_data(root, mirror=mirror, dry_run=dry_run, force=force, progress=progress)
    if root.is_dir():
        outcomes.append(fetch_xsum(root, dry_run=dry_run, force=force))
    else:  # a dry run before the directory exists
        outcomes.append(Outcome(XSUM_LABEL, HUB_DATASET, "would fetch", str(full_destination(root)),
                                "data files of the hub copy", ("--data",)))
    return outcomes
