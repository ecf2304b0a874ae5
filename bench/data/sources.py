"""Finding the raw data directory and checking raw files against its ``SHA256SUMS``.

Why: published QG/summarization numbers drift with silently different inputs, so every raw file a
builder reads is hashed and compared with the list shipped beside the data before any split is
built. The lookup order (explicit argument > ``$BENCH_DATA`` > ``<repo>/../shared/data``) lets a
user point at their own copy without editing code.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from bench.api.errors import DataError
from bench.api.paths import repo_root
from bench.api.reading import read_text
from bench.api.textfile import not_a_file

#: the fix for a raw data file that is not the text or JSON it should be
DATA_FIX = "restore it from the shared data (`bench data verify` names altered files)"

ENV_VAR = "BENCH_DATA"
SUMS_FILE = "SHA256SUMS"
_CHUNK = 1 << 20


def default_data_dir() -> Path:
    return (repo_root() / ".." / "shared" / "data").resolve()


def data_dir(explicit: Path | str | None = None) -> Path:
    """Return the raw data directory: ``explicit`` > ``$BENCH_DATA`` > ``<repo>/../shared/data``.

    Only the first candidate that is *given* is used (an explicit path that does not exist is an
    error, never a silent fallback to another copy), and the error lists every candidate.
    """
    env = os.environ.get(ENV_VAR) or None
    candidates: list[tuple[str, Path | None]] = [
        ("--data-dir argument", Path(explicit).expanduser() if explicit not in (None, "") else None),
        (f"${ENV_VAR}", Path(env).expanduser() if env else None),
        ("default <repo>/../shared/data", default_data_dir()),
    ]
    chosen = next(i for i, (_, p) in enumerate(candidates) if p is not None)
    path = candidates[chosen][1]
    assert path is not None
    if path.is_dir():
        return path.resolve()
    lines = []
    for i, (how, p) in enumerate(candidates):
        if i != chosen:
            state = "not given" if p is None else "not consulted"
        else:  # /dev/null or a FIFO is named as what it is, never "a file"
            state = "not found" if not p or not p.exists() else f"is {not_a_file(p) or 'a file'}, not a folder"
        lines.append(f"{how}: {p if p is not None else '-'} ({state})")
    raise DataError(  # one line: the CLI prints every error as one line
        "Data directory not found. Looked at: " + "; ".join(lines)
        + f". {fetch_fix(path)}; or pass --data-dir DIR / set ${ENV_VAR}=DIR to a directory holding the raw "
        f"data and its {SUMS_FILE}."
    )


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, streamed so large files need little memory."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def read_sums(root: Path) -> dict[str, str]:
    """Parse ``root/SHA256SUMS`` (``sha256sum`` format) into ``{relative path: hex}``."""
    sums_path = root / SUMS_FILE
    if not sums_path.is_file():
        raise DataError(
            f"{sums_path} not found: the data directory {root} holds no data (or does not list its files' "
            f"hashes).\n{fetch_fix(root)}, with its {SUMS_FILE}; or point --data-dir/${ENV_VAR} at a folder that "
            f"has them, or restore {SUMS_FILE} from the data's source and check with `cd {root} && sha256sum -c "
            f"{SUMS_FILE}` (a list hashed from the files at hand would vouch for whatever they hold)."
        )
    out: dict[str, str] = {}
    for lineno, line in enumerate(read_text(sums_path, "restore it from the shared data").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split(None, 1)
        if len(parts) != 2 or len(parts[0]) != 64:
            raise DataError(f"{sums_path}:{lineno}: not a `sha256sum` line: {line!r}")
        rel = parts[1].lstrip("*").strip()
        out[rel[2:] if rel.startswith("./") else rel] = parts[0].lower()
    return out


def raw_path(root: Path, rel: str) -> Path:
    """``root/rel``, or a clear error naming the missing file."""
    path = root / rel
    from bench.api.textfile import not_a_file

    what = not_a_file(path)  # a FIFO, a device, a folder: named as what it is, never "missing" (nor read)
    if what is not None:
        raise DataError(f"{path}: {what}, not the raw data file {rel} (in data directory {root}); replace it by the "
                        f"file.\n{fetch_fix(root)}; or point --data-dir/${ENV_VAR} at a complete copy.")
    if not path.is_file():
        raise DataError(
            f"Missing raw data file {path} (looked in data directory {root}).\n"
            f"{fetch_fix(root)}; or point --data-dir/${ENV_VAR} at a complete copy."
        )
    return path


def optional(spec: str) -> bool:
    """Whether a raw-file entry may be absent (``name?``): the builder uses it where it is there (XSum's recovered
    documents, which `bench fetch --data` cannot get: they have no single public source)."""
    return spec.endswith("?")


def present(root: Path, spec: str) -> str:
    """The file a raw-file entry names: ``a|b`` means ``a``, or ``b`` where only ``b`` is there (e.g. the
    reconstructed SQuAD train file of the shared data, or the official one ``bench fetch --data`` gets); a
    trailing ``?`` (:func:`optional`) is not part of the name."""
    options = spec.removesuffix("?").split("|")
    return next((o for o in options if (root / o).is_file()), options[0])


def needed(root: Path, specs: list[str] | tuple[str, ...]) -> list[str]:
    """The raw-file entries a build must verify: every one but an optional file that is not there."""
    return [s for s in specs if not optional(s) or (root / present(root, s)).is_file()]


def fetch_command(root: Path) -> str:
    """The command that downloads the raw data into ``root`` (where there is internet): `bench fetch --data`,
    with ``--data-dir ROOT`` unless that is where it writes by default (``$BENCH_DATA``, else ../shared/data)."""
    env = os.environ.get(ENV_VAR) or None
    default = Path(env).expanduser() if env else default_data_dir()
    try:
        same = default.resolve() == Path(root).resolve()
    except OSError:
        same = False
    return "bench fetch --data" if same else f"bench fetch --data --data-dir {root}"


def fetch_fix(root: Path) -> str:
    """The fix every "data missing" error ends with: the fetch command and the folder it writes."""
    return (f"Fix: `{fetch_command(root)}` downloads every task's raw files from their public sources (pinned by "
            f"commit and sha256) into {root}, where there is internet (docs/data.md)")


def verify_raw(root: Path, rels: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Hash each raw file and compare with ``SHA256SUMS``; return ``{rel: sha256}`` (``a|b`` entries: see
    :func:`present`).

    A mismatch raises ``DataError`` naming the file with expected and actual hashes, because
    building a split from an altered file would silently change every number computed on it.
    """
    sums = read_sums(root)
    got: dict[str, str] = {}
    for spec in needed(root, rels):
        rel = present(root, spec)
        path = raw_path(root, rel)
        if rel not in sums:
            raise DataError(
                f"{path} is not listed in {root / SUMS_FILE}, so it cannot be verified.\n"
                f"Fix: restore {root / SUMS_FILE} from the data's source (see {root / 'README.md'}): its hash "
                "is the source's, never one computed from the file at hand."
            )
        actual = sha256_file(path)
        if actual != sums[rel]:
            raise DataError(
                f"Checksum mismatch for raw data file {path}:\n"
                f"  expected {sums[rel]} (from {root / SUMS_FILE})\n"
                f"  actual   {actual}\n"
                f"Fix: the file was altered or truncated; restore the original (see {root / 'README.md'}) "
                f"and check with `cd {root} && sha256sum -c {SUMS_FILE}`."
            )
        got[rel] = actual
    return got
