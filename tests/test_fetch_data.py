"""`bench fetch --data` through a local HTTP server the test runs: the public sources are mapped onto it with
the one URL base override ($BENCH_DATA_MIRROR / --mirror), so nothing here reaches the internet."""

from __future__ import annotations

import hashlib
import io
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


class _Handler(BaseHTTPRequestHandler):
    server_state: Server

    def do_GET(self) -> None:
        state = self.server_state
        rng = self.headers.get("Range", "")
        state.requests.append((self.path, rng))
        body = state.files.get(self.path.lstrip("/"))
        if body is None:
            self.send_error(404)
            return
        start = int(m.group(1)) if (m := re.fullmatch(r"bytes=(\d+)-", rng)) else 0
        if start >= len(body) and rng:
            self.send_error(416)
            return
        self.send_response(206 if rng else 200)
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
