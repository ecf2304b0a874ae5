"""Split cache: round trip, canonical hashes, staleness, and `verify` naming altered files."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from bench.api.types import encode, split_sha256
from bench.data import DataError, Example, build, data_dir, load_split, verify
from bench.data import api as data_api
from bench.data.cache import decode, encode_fast
from bench.data.sources import SUMS_FILE, verify_raw

QUORA_SMALL = ["quora/duji2019/val.src", "quora/duji2019/val.tgt"]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "bench-data-cache"


def _copy_data(dst: Path, alter: str | None = None) -> Path:
    """A data dir in ``dst``: SHA256SUMS copied, every file symlinked except ``alter``, which is
    copied and changed (the shared data is read-only and large)."""
    src = data_dir()
    for path in src.rglob("*"):
        if path.is_dir():
            continue
        target = dst / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.name == SUMS_FILE or path.relative_to(src).as_posix() == alter:
            shutil.copyfile(path, target)
        else:
            target.symlink_to(path)
    if alter:
        with open(dst / alter, "a", encoding="utf-8") as f:
            f.write("an extra line\n")
    return dst


def test_canonical_hash_is_file_hash(cache_dir: Path) -> None:
    s = load_split("quora", "dev", cache_dir=cache_dir)
    path = cache_dir / "quora" / "v1" / "dev.jsonl"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == s.sha256 == split_sha256(s.examples)
    examples = [Example("a", "x\u2028y\n", "t\u00e9", {"k": '"v"'}), Example("b", "", "", {})]
    data = encode(examples)
    assert data.count(b"\n") == 2 and data.isascii()
    assert decode(data, path) == examples


def test_round_trip_and_cache_hit(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_split("quora", "dev", cache_dir=cache_dir)

    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("a fresh cache must not be rebuilt")

    monkeypatch.setattr(data_api, "_build", no_build)
    again = load_split("quora", "dev", cache_dir=cache_dir)
    assert again == first
    # the JSONL path (no marshal sidecar) gives the same split
    (cache_dir / "quora" / "v1" / "dev.marshal").unlink()
    assert load_split("quora", "dev", cache_dir=cache_dir) == first


def test_damaged_cache_is_rebuilt(cache_dir: Path) -> None:
    good = load_split("quora", "dev", cache_dir=cache_dir)
    tdir = cache_dir / "quora" / "v1"
    (tdir / "dev.marshal").unlink(missing_ok=True)
    (tdir / "dev.jsonl").write_text("garbage\n")
    assert load_split("quora", "dev", cache_dir=cache_dir) == good
    manifest = json.loads((tdir / "manifest.json").read_text())
    assert manifest["version"] == 1 and manifest["splits"]["dev"]["count"] == 2_797
    assert set(manifest["sources"]) >= set(QUORA_SMALL)


def test_build_returns_counts(tmp_path: Path) -> None:
    assert build("quora", cache_dir=tmp_path) == {"train": 100_000, "dev": 2_797, "test": 30_000}


def test_verify_passes_on_clean_data(cache_dir: Path) -> None:
    assert verify("xsum", cache_dir=cache_dir) == {
        "test-refs": 11_334,
        "test-available": 4_034,
        "validation-available": 1_079,
    }


def test_verify_names_altered_raw_file(tmp_path: Path) -> None:
    root = _copy_data(tmp_path / "data", alter="quora/duji2019/val.tgt")
    with pytest.raises(DataError) as err:
        verify("quora", data_dir=root, cache_dir=tmp_path / "cache")
    msg = str(err.value)
    assert "val.tgt" in msg and "expected" in msg and "actual" in msg and "sha256sum -c" in msg
    with pytest.raises(DataError, match=r"val\.tgt"):
        verify_raw(root, QUORA_SMALL)


def test_stale_cache_after_raw_change_fails_loudly(tmp_path: Path) -> None:
    root = _copy_data(tmp_path / "data")
    cache = tmp_path / "cache"
    assert len(load_split("xsum", "test-refs", data_dir=root, cache_dir=cache)) == 11_334
    gold = root / "xsum/gold-test-sentences.txt"
    text = gold.read_text(encoding="utf-8")
    gold.unlink()
    gold.write_text(text.replace("the", "teh", 1), encoding="utf-8")
    with pytest.raises(DataError, match=r"gold-test-sentences\.txt"):
        load_split("xsum", "test-refs", data_dir=root, cache_dir=cache)
    with pytest.raises(DataError, match=r"gold-test-sentences\.txt"):
        verify("xsum", data_dir=root, cache_dir=cache)


def test_verify_names_altered_cache_file(cache_dir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(cache_dir / "xsum", cache / "xsum")
    path = cache / "xsum" / "v1" / "validation-available.jsonl"
    stat = path.stat()
    path.write_bytes(path.read_bytes().replace(b"a", b"b", 1))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(DataError, match=r"validation-available\.jsonl"):
        verify("xsum", cache_dir=cache)


def test_missing_sums_file_is_explained(tmp_path: Path) -> None:
    root = _copy_data(tmp_path / "data")
    (root / SUMS_FILE).unlink()
    with pytest.raises(DataError, match=r"(?s)SHA256SUMS not found.*sha256sum"):
        verify("quora", data_dir=root, cache_dir=tmp_path / "cache")


def test_verify_catches_inconsistent_fast_sidecar(cache_dir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(cache_dir / "xsum", cache / "xsum")
    tdir = cache / "xsum" / "v1"
    manifest = json.loads((tdir / "manifest.json").read_text())
    entry = manifest["splits"]["validation-available"]
    fake = encode_fast([Example("x", "y", "z", {})] * entry["count"])
    (tdir / entry["fast"]["file"]).write_bytes(fake)
    entry["fast"]["sha256"] = hashlib.sha256(fake).hexdigest()
    (tdir / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DataError, match=r"validation-available\.marshal does not match"):
        verify("xsum", cache_dir=cache)
