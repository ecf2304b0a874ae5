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
import tarfile as _tar
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bench.api.atomic import write_bytes_atomic
from bench.api.download import STALL_S, Bounds, Progress, download
from bench.api.errors import DataError
from bench.data.public_sources import (
    ARCHIVE_MEMBERS_CEILING,
    ARCHIVE_UNPACKED_CEILING,
    MIRROR_ENV,
    Output,
    Source,
    catalogue,
)
from bench.data.sources import ENV_VAR, SUMS_FILE, default_data_dir, sha256_file
from bench.workflows.fetch import Outcome

__all__ = ["CACHE", "DEADLINE_S", "STALL_S", "Planned", "Progress", "add_sums", "fetch_data", "fetch_everything",
           "plan", "target_dir"]

CACHE = ".fetch"  # downloads whose own hash is unknown wait here (chunks, archives) between runs
_CHUNK = 1 << 16
#: the wall-clock deadline of one download (None: from its size cap, see bench.api.download.Bounds); tests set ~1 s
DEADLINE_S: float | None = None
#: the most an archive member may be when no output pins its size
MEMBER_CEILING = 64 << 20
#: the most a tar header's own payload (a pax record set, a GNU long name) may be: real ones are under 1 KiB
TAR_HEADER_CEILING = 64 << 10
#: the most extended headers (pax, GNU long name) in a row before a member: real archives have one to three
TAR_CHAIN_CEILING = 8


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
            notes = _fetch(root, src, src.urls(mirror), force=force, progress=progress)
        except DataError as exc:
            outcomes.append(Outcome(src.name, row.url, "failed", row.where, " ".join(str(exc).split())))
            continue
        except MemoryError:
            outcomes.append(Outcome(src.name, row.url, "failed", row.where, "ran out of memory while fetching it. Fix: "
                                    "free memory and re-run `bench fetch --data` (it resumes)."))
            continue
        add_sums(root, {o.rel: o.sha256 for o in src.outputs})
        outcomes.append(Outcome(src.name, row.url, "fetched", row.where,
                                "; ".join(["sha256 matches the pin", *notes])))
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


def _bounds(src: Source) -> Bounds:
    """The size cap of each download of ``src`` (its pin, else its kind's ceiling), with this module's timeouts."""
    return Bounds(src.max_bytes(), deadline_s=DEADLINE_S, stall_s=STALL_S)


def _fetch(root: Path, src: Source, urls: list[str], *, force: bool, progress: Progress | None) -> list[str]:
    """Land every output of ``src``; returns notes for its row (a redirect to another host)."""
    notes: list[str] = []
    bounds = _bounds(src)
    if src.kind == "file":
        out = src.outputs[0]
        _download(urls[0], root / out.rel, out.sha256, bounds, force=force, progress=progress, notes=notes)
        return notes
    cache = root / CACHE / src.name
    files = [_download(u, cache / u.rsplit("/", 1)[-1], None, bounds, force=force, progress=progress, notes=notes)
             for u in urls]
    again = (f"Fix: `bench fetch --data --force` discards the cached download ({cache}) and fetches it again; if "
             "it persists the upstream files changed.")
    made = _decode_chunked(files, again) if src.kind == "chunked" else _members(files[0], src.outputs, again)
    for out in src.outputs:
        data = made.get(out.member)
        if data is None:
            raise DataError(f"{urls[0]} holds no {out.member} for {out.rel} (the cached download "
                            f"{files[0]}). {again}")
        got = hashlib.sha256(data).hexdigest()
        if got != out.sha256:
            raise DataError(f"{out.rel} made from {urls[0]} has sha256 {got[:12]}…, the project pins "
                            f"{out.sha256[:12]}… (the cached download {cache} is poisoned or stale). {again}")
    for out in src.outputs:
        write_bytes_atomic(root / out.rel, made[out.member])
    shutil.rmtree(cache, ignore_errors=True)
    with contextlib.suppress(OSError):  # the last source's cache gone: no empty folder left
        cache.parent.rmdir()
    return notes


def _download(url: str, dest: Path, sha256: str | None, bounds: Bounds, *, force: bool, progress: Progress | None,
              notes: list[str]) -> Path:
    """``url`` to ``dest`` through ``dest.part`` (resumed when present; opened without following links) within
    ``bounds``; with ``sha256`` it must match before the rename. Returns ``dest``; an existing ``dest`` without a
    pin is kept (a cached chunk) unless ``force``."""
    if dest.is_file() and not dest.is_symlink() and not force and (sha256 is None or sha256_file(dest) == sha256):
        return dest
    part = dest.with_name(dest.name + ".part")
    if force and part.is_file() and not part.is_symlink():
        part.unlink()
    fix = "re-run `bench fetch --data` (or set $" + MIRROR_ENV + " to a mirror)"
    got = download(url, part, bounds, progress=progress, label=dest.name, fix=fix)
    if got.redirected_to and f"redirected to {got.redirected_to}" not in notes:
        notes.append(f"redirected to {got.redirected_to}")
    served = f" (served by {got.redirected_to})" if got.redirected_to else ""
    if sha256 is not None:
        digest = sha256_file(part)
        if digest != sha256:
            part.unlink(missing_ok=True)
            raise DataError(f"{url}: sha256 {digest[:12]}…{served}, the project pins {sha256[:12]}…; nothing was "
                            "kept. Fix: re-run `bench fetch --data`; if it persists the upstream file changed.")
    os.replace(part, dest)
    return dest


def _decode_chunked(files: Iterable[Path], again: str) -> dict[str, bytes]:
    """``SPLIT.src``/``SPLIT.tgt`` texts from chunk files named ``SPLIT_NNN.bin``, chunks in name order; a record
    that is not UTF-8 is one line naming the chunk and the record."""
    from bench.data.chunked import pair, records

    lines: dict[str, list[str]] = {}
    for path in sorted(files, key=lambda p: p.name):
        split = path.name.rsplit("_", 1)[0]
        for n, features in enumerate(records(path), 1):
            try:
                src, tgt = pair(features)
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}: record {n} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at "
                                f"offset {exc.start} of a feature). {again}") from None
            lines.setdefault(f"{split}.src", []).append(src)
            lines.setdefault(f"{split}.tgt", []).append(tgt)
    return {name: ("\n".join(text) + "\n").encode("utf-8") for name, text in lines.items()}


def _members(archive: Path, outputs: Sequence[Output], again: str) -> dict[str, bytes]:
    """The archive members for ``outputs``, streamed: a member is read only when its base name is wanted, or its
    size is a wanted output's pinned size (then kept only when its bytes have the pinned hash); no member is read
    past its output's pinned size, and the walk stops at :data:`ARCHIVE_MEMBERS_CEILING` members or
    :data:`ARCHIVE_UNPACKED_CEILING` unpacked bytes (a tar bomb is refused at its first header, never unpacked)."""
    wanted = {o.member: o for o in outputs}
    by_size: dict[int, list[Output]] = {}
    for o in outputs:
        if o.size is not None:
            by_size.setdefault(o.size, []).append(o)
    found: dict[str, bytes] = {}
    try:
        with tarfile.open(archive, "r|*", tarinfo=_BoundedTarInfo) as tar:
            for count, info in enumerate(tar, 1):
                if count > ARCHIVE_MEMBERS_CEILING or info.offset_data + info.size > ARCHIVE_UNPACKED_CEILING:
                    raise DataError(f"{archive}: holds more than {ARCHIVE_MEMBERS_CEILING:,} members or "
                                    f"{ARCHIVE_UNPACKED_CEILING >> 20:,} MiB unpacked (member {info.name[:80]!r}: "
                                    f"{info.size:,} bytes); not unpacked. {again}")
                if not info.isfile() or len(found) == len(wanted):
                    continue
                name = info.name.rsplit("/", 1)[-1]
                by_name = wanted.get(name) if name not in found else None
                candidates = [o for o in by_size.get(info.size, []) if o.member not in found]
                if by_name is None and not candidates:
                    continue  # not wanted: skipped, never read
                cap = by_name.size if by_name is not None and by_name.size is not None else MEMBER_CEILING
                if info.size > cap:
                    raise DataError(f"{archive}: member {info.name[:80]!r} is {info.size:,} bytes, over the "
                                    f"{cap:,} bytes of {name}. {again}")
                handle = tar.extractfile(info)
                if handle is None:
                    continue
                data = _read_member(handle, info.size)
                if by_name is not None:
                    found[name] = data
                    continue
                digest = hashlib.sha256(data).hexdigest()
                match = next((o for o in candidates if o.sha256 == digest), None)
                if match is not None:
                    found[match.member] = data
    except RecursionError:  # a chain of extended headers, each naming the next
        raise DataError(f"{archive}: a chain of extended tar headers too long to read; not unpacked. {again}") from None
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        archive.unlink(missing_ok=True)
        raise DataError(f"{archive}: not a readable tar archive ({exc}); removed. Fix: re-run "
                        "`bench fetch --data`.") from exc
    return found


class _BoundedTarInfo(tarfile.TarInfo):
    """A tar header whose own payload is bounded: ``tarfile`` reads a pax or GNU long-name header's payload whole
    into memory, and chains old-GNU sparse headers without end, before the caller sees any member; here such a
    payload over :data:`TAR_HEADER_CEILING` bytes, a chain of more than :data:`TAR_CHAIN_CEILING` of them, and any
    sparse member, is refused first."""

    def _proc_member(self, tarfile: Any) -> Any:
        extended = (_tar.GNUTYPE_LONGNAME, _tar.GNUTYPE_LONGLINK, _tar.XHDTYPE, _tar.XGLTYPE, _tar.SOLARIS_XHDTYPE)
        if self.type in extended and self.size > TAR_HEADER_CEILING:
            raise DataError(f"{getattr(tarfile, 'name', None) or 'the archive'}: an extended tar header of "
                            f"{self.size:,} bytes (over {TAR_HEADER_CEILING:,}); not unpacked. Fix: check the "
                            "source (or the mirror), then `bench fetch --data --force`.")
        chained = getattr(tarfile, "_bench_chained", 0) + 1 if self.type in extended else 0
        if chained > TAR_CHAIN_CEILING:  # tarfile follows such a chain by recursion, each payload held
            raise DataError(f"{getattr(tarfile, 'name', None) or 'the archive'}: more than {TAR_CHAIN_CEILING} "
                            "extended tar headers in a row; not unpacked. Fix: check the source (or the mirror), "
                            "then `bench fetch --data --force`.")
        tarfile._bench_chained = chained
        if self.type == _tar.GNUTYPE_SPARSE:
            raise DataError(f"{getattr(tarfile, 'name', None) or 'the archive'}: a sparse tar member "
                            f"({self.name[:80]!r}); not unpacked. Fix: check the source (or the mirror), then "
                            "`bench fetch --data --force`.")
        return super()._proc_member(tarfile)  # type: ignore[misc]  # tarfile's dispatch, stable since 3.2


def _read_member(handle: IO[bytes], size: int) -> bytes:
    """A member's bytes, read in chunks and never past ``size`` (its header's size, already within its cap)."""
    parts, left = [], size
    while left > 0:
        chunk = handle.read(min(_CHUNK, left))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


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
