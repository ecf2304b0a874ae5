"""`bench fetch --data` through a local HTTP server the test runs: the public sources are mapped onto it with
the one URL base override ($BENCH_DATA_MIRROR / --mirror), so nothing here reaches the internet."""

from __future__ import annotations

import hashlib
import io
import os
import re
import tarfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.data import chunked
from bench.data.public_sources import MIRROR_ENV, RAW, Output, Source, catalogue
from bench.data.sources import default_data_dir, read_sums, verify_raw
from bench.workflows import fetch_data as fd

SHARED = default_data_dir()
sha = lambda b: hashlib.sha256(b).hexdigest()  # noqa: E731


@dataclass
class Server:
    url: str
    files: dict[str, bytes]
    requests: list[tuple[str, str]] = field(default_factory=list)
    #: path -> how a hostile mirror answers it: "endless" (a body with no end), "drip" (one byte every 0.2 s),
    #: "slow-headers" (the status line one byte at a time), "big" (a Content-Length over any cap),
    #: "redirect:URL" (302 to URL)
    hostile: dict[str, str] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)


class _Handler(BaseHTTPRequestHandler):
    server_state: Server

    def _hostile(self, mode: str) -> None:
        state = self.server_state
        try:
            if mode.startswith("redirect:"):
                self.send_response(302)
                self.send_header("Location", mode.removeprefix("redirect:"))
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif mode == "big":
                self.send_response(200)
                self.send_header("Content-Length", str(1 << 40))
                self.end_headers()
                self.wfile.write(b"x" * 1024)
            elif mode == "chunked":  # HTTP/1.1 chunked encoding, no end
                self.protocol_version = "HTTP/1.1"
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while not state.stop.is_set():
                    self.wfile.write(b"10000\r\n" + b"\0" * 0x10000 + b"\r\n")
            elif mode == "reason":  # a reason phrase carrying a terminal escape
                self.send_response(500, "Broken \x1b[2J\x1b]0;owned\x07")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif mode == "loop":
                self.send_response(302)
                self.send_header("Location", self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif mode == "slow-headers":
                for byte in b"HTTP/1.1 200 OK\r\n":
                    if state.stop.wait(0.2):
                        return
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
            else:
                self.send_response(200)
                self.end_headers()  # no Content-Length: the body ends when the server says so
                block = b"\0" * (1 << 16) if mode == "endless" else b"x"
                while not state.stop.is_set():
                    self.wfile.write(block)
                    self.wfile.flush()
                    if mode == "drip":
                        state.stop.wait(0.2)
        except OSError:  # the client hung up: what a bounded download does
            pass

    def do_GET(self) -> None:
        state = self.server_state
        rng = self.headers.get("Range", "")
        state.requests.append((self.path, rng))
        mode = state.hostile.get(self.path.lstrip("/"))
        if mode is not None:
            self._hostile(mode)
            return
        body = state.files.get(self.path.lstrip("/"))
        if body is None:
            self.send_error(404)
            return
        start = int(m.group(1)) if (m := re.fullmatch(r"bytes=(\d+)-", rng)) else 0
        if start >= len(body) and rng:
            self.send_error(416)
            return
        self.send_response(206 if rng else 200)
        if rng:  # a 206 says which bytes it holds (RFC 9110 §15.3.7): the harness appends only the ones it asked for
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        self.wfile.write(body[start:])

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    state = Server("", {})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (_Handler,), {"server_state": state}))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv(MIRROR_ENV, state.url)
    monkeypatch.setattr(fd, "DEADLINE_S", 10.0)
    monkeypatch.setattr(fd, "STALL_S", 5.0)
    yield state
    state.stop.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


PAIRS = {"val": [("how do i learn python ?", "what is the best way to learn python ?"),
                 ("who is the dalai lama", "who is the dalai lama ? what does lama indicate")],
         "test": [("what is love ?", "how do you define love ?")]}


def _chunks() -> dict[str, bytes]:
    """Two val chunks and one test chunk, as the Quora split is published (pointer-generator records)."""
    val = [chunked.encode({"article": a.encode(), "abstract": f"<s> {b} </s>".encode()}) for a, b in PAIRS["val"]]
    test = [chunked.encode({"article": a.encode(), "abstract": f"<s> {b} </s>".encode()}) for a, b in PAIRS["test"]]
    return {"val_000.bin": val[0], "val_001.bin": val[1], "test_000.bin": test[0]}


def _texts(split: str, side: int) -> bytes:
    return ("\n".join(p[side] for p in PAIRS[split]) + "\n").encode()


def _archive(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def stand_in_sources(server: Server) -> list[Source]:
    """One source of each kind, their files on the server, pinned the way the real catalogue pins them."""
    doclist = b"Super_Bowl_50\nWarsaw\n"
    gold, ptgen = b"the cat sat .\n", b"a cat sat .\n"
    files = {f"{RAW}/xinyadu/nqg/{'0' * 40}/data/doclist-dev.txt": doclist,
             f"{RAW}/EdinburghNLP/XSum/{'0' * 40}/xsum-model-predictions.tar.gz":
                 _archive({"preds/gold-test-sentences.txt": gold, "preds/renamed-ptgen.txt": ptgen})}
    chunk_paths = []
    for name, data in _chunks().items():
        chunk_paths.append(f"wyu-du/RPG/{'0' * 40}/data/quora/chunked/{name}")
        files[f"{RAW}/{chunk_paths[-1]}"] = data
    server.files.update(files)
    quora = tuple(Output(f"quora/duji2019/{s}.{e}", sha(_texts(s, i)), f"{s}.{e}", len(_texts(s, i)))
                  for s in ("val", "test") for i, e in enumerate(("src", "tgt")))
    return [
        Source("du2017", "xinyadu/nqg@" + "0" * 40, RAW, (f"xinyadu/nqg/{'0' * 40}/data/doclist-dev.txt",),
               (Output("du2017/doclist-dev.txt", sha(doclist), size=len(doclist)),), sha256=sha(doclist),
               size=len(doclist)),
        Source("quora", "wyu-du/RPG@" + "0" * 40, RAW, tuple(chunk_paths), quora, kind="chunked"),
        Source("xsum-predictions", "EdinburghNLP/XSum@" + "0" * 40, RAW,
               (f"EdinburghNLP/XSum/{'0' * 40}/xsum-model-predictions.tar.gz",),
               (Output("xsum/gold-test-sentences.txt", sha(gold), "gold-test-sentences.txt", len(gold)),
                Output("xsum/outputs/ptgen-test-output.txt", sha(ptgen), "ptgen-test-output.txt", len(ptgen))),
               kind="tar"),
    ]


def test_fetch_lands_every_file_verified_records_its_hash_and_reruns_as_present(server: Server,
                                                                                tmp_path: Path) -> None:
    sources = stand_in_sources(server)
    seen: list[tuple[str, int, int | None]] = []
    out = fd.fetch_data(tmp_path, sources, progress=lambda *a: seen.append(a))
    assert [o.status for o in out] == ["fetched"] * 3, [o.detail for o in out]
    assert (tmp_path / "quora/duji2019/val.tgt").read_bytes() == _texts("val", 1)
    assert (tmp_path / "quora/duji2019/test.src").read_bytes() == _texts("test", 0)
    # a tar member found by its pinned hash when its name differs
    assert (tmp_path / "xsum/outputs/ptgen-test-output.txt").read_bytes() == b"a cat sat .\n"
    rels = [o.rel for s in sources for o in s.outputs]
    assert sorted(read_sums(tmp_path)) == sorted(rels)
    verify_raw(tmp_path, rels)  # what the split builders check
    assert not (tmp_path / fd.CACHE).exists(), "the chunk/archive cache is removed once their files landed"
    assert not list(tmp_path.rglob("*.part")) and not list(tmp_path.rglob("*.tmp"))
    assert seen and seen[-1][1] == seen[-1][2], "progress reaches the total"
    n = len(server.requests)
    assert [o.status for o in fd.fetch_data(tmp_path, sources)] == ["present"] * 3
    assert len(server.requests) == n, "a re-run downloads nothing"


def test_a_file_that_does_not_match_its_pin_never_lands_and_says_the_url_and_fix(server: Server,
                                                                                 tmp_path: Path) -> None:
    sources = stand_in_sources(server)
    bad = [Source(s.name, s.origin, s.host, s.paths, tuple(Output(o.rel, "f" * 64, o.member, o.size)
                                                           for o in s.outputs),
                  s.kind, "f" * 64 if s.sha256 else None, size=s.size) for s in sources]
    out = fd.fetch_data(tmp_path, bad)
    assert [o.status for o in out] == ["failed"] * 3
    for o in out:
        assert server.url in o.source and "Fix:" in o.detail and "\n" not in o.detail, o
    assert not (tmp_path / "du2017/doclist-dev.txt").exists() and not (tmp_path / "quora").exists()
    assert not (tmp_path / "SHA256SUMS").exists()


def test_a_partial_download_resumes_and_a_missing_url_is_one_line(server: Server, tmp_path: Path) -> None:
    src = stand_in_sources(server)[0]
    body = server.files[f"{RAW}/{src.paths[0]}"]
    part = tmp_path / "du2017" / "doclist-dev.txt.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(body[:5])
    assert fd.fetch_data(tmp_path, [src])[0].status == "fetched"
    assert server.requests[-1][1] == "bytes=5-", "the download resumed where the .part stopped"
    assert (tmp_path / "du2017/doclist-dev.txt").read_bytes() == body
    gone = Source(src.name, src.origin, src.host, ("nowhere/x.txt",), (Output("x.txt", "0" * 64),), sha256="0" * 64)
    row = fd.fetch_data(tmp_path, [gone])[0]
    assert row.status == "failed" and "HTTP 404" in row.detail and f"{server.url}/{RAW}/nowhere/x.txt" in row.detail


def test_dry_run_lists_url_to_path_and_downloads_nothing(server: Server, tmp_path: Path) -> None:
    rows = fd.fetch_data(tmp_path, catalogue(), dry_run=True)
    assert {r.status for r in rows} == {"would fetch"} and not server.requests
    assert all(r.source.startswith(server.url + "/") for r in rows)
    quora = next(r for r in rows if r.what == "quora")
    assert "(133 files)" in quora.source and "train_000.bin" in quora.source
    landed = fd.fetch_everything(tmp_path / "new", dry_run=True)
    assert landed[-1].what == "xsum (full corpus)" and not (tmp_path / "new").exists()


def test_the_catalogue_pins_every_shared_file_it_names_by_commit_and_sha256() -> None:
    sums = read_sums(SHARED) if (SHARED / "SHA256SUMS").is_file() else {}
    outputs = [o for s in catalogue() for o in s.outputs]
    assert len({o.rel for o in outputs}) == len(outputs)
    for src in catalogue():
        for url in src.urls(""):
            assert url.startswith("https://"), url
            if src.host == RAW:
                assert re.search(r"/[0-9a-f]{40}/", url), f"{url}: not pinned to a full commit"
        for out in src.outputs:
            if out.rel in sums:
                assert sums[out.rel] == out.sha256, out.rel
    shared = set(sums) - {"xsum/documents-recovered.jsonl", "squad/train-v1.1.reconstructed.json"}
    assert shared <= {o.rel for o in outputs}, "every public shared file has a source"


def test_chunk_records_decode_to_question_and_paraphrase(tmp_path: Path) -> None:
    path = tmp_path / "val_000.bin"
    path.write_bytes(chunked.encode({"article": b"a b ?", "abstract": b"<s> c d ? </s> <s> e </s>"}))
    assert [chunked.pair(r) for r in chunked.records(path)] == [("a b ?", "c d ? e")]
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(Exception, match="runs past the end"):
        list(chunked.records(path))


def test_squad_train_examples_read_the_same_from_the_official_or_the_reconstructed_file(tmp_path: Path) -> None:
    from bench.data.sources import present
    from bench.data.squad import TRAIN_FILES, _examples

    context = "Paris is in France. Paris is big."
    official = {"title": "T", "paragraphs": [{"context": context, "qas": [
        {"id": "5733be284776f41900661182", "question": "Where?", "answers": [{"text": "Paris", "answer_start": 20}]}]}]}
    rebuilt = {"title": "T", "paragraphs": [{"context": context, "qas": [
        {"id": None, "question": "Where?", "answers": [{"text": "Paris", "answer_start": 0}]}]}]}
    assert _examples([official], du_train=True) == _examples([rebuilt], du_train=True)
    assert _examples([official])[0].id == "5733be284776f41900661182"  # dev/test keep the official ids
    assert present(tmp_path, TRAIN_FILES) == "squad/train-v1.1.reconstructed.json"
    (tmp_path / "squad").mkdir()
    (tmp_path / "squad/train-v1.1.json").write_text("{}")
    assert present(tmp_path, TRAIN_FILES) == "squad/train-v1.1.json"


def test_cli_data_fetch_dry_run_prints_each_url_and_path_whole(server: Server, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from bench.cli import app

    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(app, ["data", "fetch", "--dry-run", "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    url = f"{server.url}/rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json"
    assert f"  {url}" in lines and f"  → {tmp_path.resolve() / 'd/squad/dev-v1.1.json'}" in lines
    assert not server.requests


# --- a hostile mirror (#57): every download is bounded, nothing lands outside the data folder ---------------------
def _doclist(server: Server) -> Source:
    return stand_in_sources(server)[0]


def _timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    import time

    started = time.monotonic()
    out = fn(*args, **kwargs)
    return out, time.monotonic() - started


def test_an_endless_body_stops_at_the_pinned_size(server: Server, tmp_path: Path) -> None:
    src = _doclist(server)
    server.hostile[f"{RAW}/{src.paths[0]}"] = "endless"
    [row], took = _timed(fd.fetch_data, tmp_path / "data", [src])
    assert row.status == "failed" and f"{src.size:,}-byte cap" in row.detail and "\n" not in row.detail, row.detail
    assert took < 5, f"an endless body ran {took:.1f} s"
    written = sum(p.stat().st_size for p in (tmp_path / "data").rglob("*") if p.is_file())
    assert written <= src.max_bytes(), f"{written:,} bytes written past a {src.max_bytes():,}-byte cap"


def test_an_announced_size_over_the_cap_is_refused_before_the_body(server: Server, tmp_path: Path) -> None:
    src = _doclist(server)
    server.hostile[f"{RAW}/{src.paths[0]}"] = "big"
    [row] = fd.fetch_data(tmp_path / "data", [src])
    assert row.status == "failed" and "announces 1,099,511,627,776 bytes" in row.detail, row.detail
    assert not list((tmp_path / "data").rglob("*.part"))


def test_a_drip_is_a_stall_within_the_stall_timeout(server: Server, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fd, "STALL_S", 1.0)
    src = _doclist(server)
    server.hostile[f"{RAW}/{src.paths[0]}"] = "drip"
    [row], took = _timed(fd.fetch_data, tmp_path / "data", [src])
    assert row.status == "failed" and "stalled" in row.detail and "resumes" in row.detail, row.detail
    assert took < 4, f"a 1-byte drip held the fetch {took:.1f} s past a 1 s stall timeout"


def test_the_deadline_bounds_a_transfer_that_never_stalls(server: Server, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Headers dripped one byte at a time never trip a socket timeout; the deadline's watchdog closes them."""
    monkeypatch.setattr(fd, "DEADLINE_S", 1.0)
    src = _doclist(server)
    server.hostile[f"{RAW}/{src.paths[0]}"] = "slow-headers"
    [row], took = _timed(fd.fetch_data, tmp_path / "data", [src])
    assert row.status == "failed" and "1 s deadline" in row.detail, row.detail
    assert took < 4, took


def test_a_symlinked_part_file_is_refused_not_written_through(server: Server, tmp_path: Path) -> None:
    src = _doclist(server)
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_bytes(b"sentinel\n")
    data = tmp_path / "data"
    part = data / "du2017" / "doclist-dev.txt.part"
    part.parent.mkdir(parents=True)
    part.symlink_to(victim)
    [row] = fd.fetch_data(data, [src])
    assert row.status == "failed" and str(part) in row.detail and "symbolic link" in row.detail, row.detail
    assert victim.read_bytes() == b"sentinel\n" and part.is_symlink()
    assert not (data / "du2017" / "doclist-dev.txt").exists()


def test_a_poisoned_cached_download_names_itself_and_force(server: Server, tmp_path: Path) -> None:
    src = stand_in_sources(server)[1]  # the Quora chunks: their own hash is not known, they wait in the cache
    cache = tmp_path / fd.CACHE / "quora"
    cache.mkdir(parents=True)
    poisoned = chunked.encode({"article": b"poisoned ?", "abstract": b"<s> poisoned </s>"})
    (cache / "val_000.bin").write_bytes(poisoned)
    [row] = fd.fetch_data(tmp_path, [src])
    assert row.status == "failed" and "--force" in row.detail and str(cache) in row.detail, row.detail
    [again] = fd.fetch_data(tmp_path, [src], force=True)
    assert again.status == "fetched", again.detail


def test_invalid_utf8_in_a_quora_chunk_is_one_line(server: Server, tmp_path: Path) -> None:
    src = stand_in_sources(server)[1]
    bad = chunked.encode({"article": b"caf\xe9 ?", "abstract": b"<s> ok </s>"})
    server.files[f"{RAW}/{src.paths[0]}"] = bad
    [row] = fd.fetch_data(tmp_path, [src])
    assert row.status == "failed" and "val_000.bin: record 1 is not UTF-8" in row.detail, row.detail
    assert "--force" in row.detail and "\n" not in row.detail


def _bomb(members: dict[str, int]) -> bytes:
    """A gzipped tar whose members are ``size`` zero bytes each: tiny compressed, large unpacked."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, size in members.items():
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, io.BytesIO(b"\0" * size))
    return buf.getvalue()


def test_a_tar_bomb_is_refused_at_its_header_without_unpacking(server: Server, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import tracemalloc

    monkeypatch.setattr(fd, "ARCHIVE_UNPACKED_CEILING", 4 << 20)
    src = stand_in_sources(server)[2]
    bomb = _bomb({"filler.bin": 32 << 20, "preds/gold-test-sentences.txt": 14})
    assert len(bomb) < 100_000
    server.files[f"{RAW}/{src.paths[0]}"] = bomb
    tracemalloc.start()
    [row], took = _timed(fd.fetch_data, tmp_path, [src])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert row.status == "failed" and "unpacked" in row.detail and "filler.bin" in row.detail, row.detail
    assert peak < 8 << 20 and took < 5, (peak, took)


def test_only_the_wanted_members_are_read_and_never_past_their_pinned_size(server: Server, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    src = stand_in_sources(server)[2]
    read: list[str] = []
    real = fd._read_member

    def spy(handle, size):  # type: ignore[no-untyped-def]
        read.append(handle.name if hasattr(handle, "name") else "?")
        return real(handle, size)

    monkeypatch.setattr(fd, "_read_member", spy)
    gold, ptgen = b"the cat sat .\n", b"a cat sat .\n"
    server.files[f"{RAW}/{src.paths[0]}"] = _archive({"preds/other-model.txt": b"x" * 5000, "preds/huge.bin":
                                                      b"\0" * 100_000, "preds/gold-test-sentences.txt": gold,
                                                      "preds/renamed-ptgen.txt": ptgen})
    [row] = fd.fetch_data(tmp_path, [src])
    assert row.status == "fetched", row.detail
    assert len(read) == 2, read  # the two wanted members (by name, and by pinned size then hash), nothing else
    # a member under a wanted name but larger than its pinned size is refused, not read
    server.files[f"{RAW}/{src.paths[0]}"] = _archive({"gold-test-sentences.txt": b"y" * 1000})
    [big] = fd.fetch_data(tmp_path / "again", [src], force=True)
    assert big.status == "failed" and f"over the {len(gold)} bytes of gold-test-sentences.txt" in big.detail


def test_a_redirect_to_another_host_is_named_in_the_row(server: Server, tmp_path: Path) -> None:
    src = _doclist(server)
    path = f"{RAW}/{src.paths[0]}"
    other = server.url.replace("127.0.0.1", "localhost")
    server.files["elsewhere/doclist-dev.txt"] = server.files.pop(path)
    server.hostile[path] = f"redirect:{other}/elsewhere/doclist-dev.txt"
    [row] = fd.fetch_data(tmp_path, [src])
    assert row.status == "fetched" and f"redirected to {other.split('//')[1]}" in row.detail, row.detail


def test_a_redirect_to_a_file_url_is_refused(server: Server, tmp_path: Path) -> None:
    src = _doclist(server)
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_bytes(server.files[f"{RAW}/{src.paths[0]}"])  # even the right bytes: file:// is never read
    server.hostile[f"{RAW}/{src.paths[0]}"] = f"redirect:file://{secret}"
    [row] = fd.fetch_data(tmp_path / "data", [src])
    assert row.status == "failed" and "file://" in row.detail and "not allowed" in row.detail, row.detail
    assert not (tmp_path / "data" / "du2017" / "doclist-dev.txt").exists()


def test_out_of_memory_while_fetching_is_a_row_not_a_traceback(server: Server, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    src = stand_in_sources(server)[2]

    def exhausted(*args: object) -> dict[str, bytes]:
        raise MemoryError

    monkeypatch.setattr(fd, "_members", exhausted)
    [row] = fd.fetch_data(tmp_path, [src])
    assert row.status == "failed" and "ran out of memory" in row.detail and "Fix:" in row.detail


def test_every_pinned_size_is_the_shared_files_size() -> None:
    from bench.data.public_sources import SIZES, SUMS

    assert set(SIZES) == set(SUMS) | {"squad/train-v1.1.json"}
    for rel, size in SIZES.items():
        if (SHARED / rel).is_file():
            assert (SHARED / rel).stat().st_size == size, rel
    assert all(s.max_bytes() > 0 for s in catalogue())


def test_an_endless_chunked_body_stops_at_the_cap(server: Server, tmp_path: Path) -> None:
    src = _doclist(server)
    server.hostile[f"{RAW}/{src.paths[0]}"] = "chunked"
    [row], took = _timed(fd.fetch_data, tmp_path, [src])
    assert row.status == "failed" and "-byte cap" in row.detail and took < 5, (row.detail, took)


def test_a_redirect_loop_is_one_row(server: Server, tmp_path: Path) -> None:
    src = _doclist(server)
    server.hostile[f"{RAW}/{src.paths[0]}"] = "loop"
    [row] = fd.fetch_data(tmp_path, [src])
    assert row.status == "failed" and "redirect" in row.detail.lower(), row.detail


def test_a_hard_linked_part_file_is_refused_not_written_through(server: Server, tmp_path: Path) -> None:
    src = _doclist(server)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"sentinel\n")
    part = tmp_path / "data" / "du2017" / "doclist-dev.txt.part"
    part.parent.mkdir(parents=True)
    os.link(victim, part)
    [row] = fd.fetch_data(tmp_path / "data", [src], force=False)
    assert row.status == "failed" and "hard link" in row.detail, row.detail
    assert victim.read_bytes() == b"sentinel\n"


def _raw_tar(*blocks: tuple[str, bytes, bytes]) -> bytes:
    """A gzipped tar of (type flag, name, payload) headers written by hand: what tarfile itself would not write."""
    import gzip

    out = b""
    for flag, name, payload in blocks:
        info = tarfile.TarInfo(name)
        info.size, info.type = len(payload), flag.encode()
        header = info.tobuf(format=tarfile.USTAR_FORMAT)
        out += header + payload + b"\0" * (-len(payload) % 512)
    return gzip.compress(out + b"\0" * 1024)


@pytest.mark.parametrize("kind", ["pax", "gnu-longname", "sparse", "pax-chain"])
def test_a_tar_header_bomb_is_refused_before_tarfile_reads_it(kind: str, server: Server, tmp_path: Path) -> None:
    """tarfile reads a pax or GNU long-name header's payload whole, and follows chains of them recursively,
    before the walk sees a member: such a header over 64 KiB, a sparse member or a long chain is one row."""
    import tracemalloc

    src = stand_in_sources(server)[2]
    big = b"0" * (16 << 20)
    blocks = {"pax": [("x", "pax", big)], "gnu-longname": [("L", "././@LongLink", big)],
              "sparse": [("S", "sparse.bin", b"")],
              "pax-chain": [("x", "pax", b"20 comment=aaaaaaaa\n")] * 50}[kind]
    server.files[f"{RAW}/{src.paths[0]}"] = _raw_tar(*blocks, ("0", "gold-test-sentences.txt", b"x\n"))
    tracemalloc.start()
    [row], took = _timed(fd.fetch_data, tmp_path, [src])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert row.status == "failed" and "not unpacked" in row.detail and "\n" not in row.detail, row.detail
    assert peak < 12 << 20 and took < 10, (peak, took)


def test_a_mirror_that_is_not_http_is_one_row(tmp_path: Path) -> None:
    """A file:// (or ftp://) mirror is refused up front: the downloader has no handler but http(s)."""
    src = next(s for s in catalogue() if s.paths[0].endswith("doclist-dev.txt"))
    [row] = fd.fetch_data(tmp_path / "data", [src], mirror=f"file://{tmp_path}")
    assert row.status == "failed" and "only http and https" in row.detail and "Fix:" in row.detail, row.detail


def test_a_servers_words_reach_the_row_as_text(server: Server, tmp_path: Path) -> None:
    src = _doclist(server)
    server.hostile[f"{RAW}/{src.paths[0]}"] = "reason"
    [row] = fd.fetch_data(tmp_path, [src])
    assert row.status == "failed" and "HTTP 500 Broken" in row.detail, row.detail
    assert "\x1b" not in row.detail and "\x07" not in row.detail and "\\x1b[2J" in row.detail
