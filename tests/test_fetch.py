"""`bench fetch` and the loader's hub fallback, against a local stand-in for the HF hub that the test serves.

The server answers the few endpoints huggingface_hub's snapshot_download uses (repo info, tree listing, and
HEAD/GET of /resolve/) for a tiny BERT checkpoint built here and a tiny XSum-shaped dataset. Nothing may reach
the real hub: HF_ENDPOINT points at the local server and every other host name lookup fails the test.
"""

from __future__ import annotations

import hashlib
import io
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

torch = pytest.importorskip("torch")
hf_constants = pytest.importorskip("huggingface_hub.constants")

from bench.api import checkpoints as bench_hub  # noqa: E402
from bench.workflows import fetch  # noqa: E402

REPO = "bench-test/tiny-bert"
NAME = "tiny-test-bert"
LFS_SUFFIXES = (".safetensors", ".bin", ".parquet", ".h5")


def _blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _commit(files: dict[str, bytes]) -> str:
    return hashlib.sha1(json.dumps({k: _sha256(v) for k, v in sorted(files.items())}).encode()).hexdigest()


@dataclass
class FakeRepo:
    refs: dict[str, str] = field(default_factory=dict)  # branch -> commit
    trees: dict[str, dict[str, bytes]] = field(default_factory=dict)  # commit -> files

    def add(self, branch: str, files: dict[str, bytes]) -> str:
        commit = _commit(files)
        self.refs[branch], self.trees[commit] = commit, files
        return commit


@dataclass
class FakeHub:
    url: str
    repos: dict[tuple[str, str], FakeRepo]  # (models|datasets, repo id) -> repo
    requests: list[str]
    #: file path -> how a hostile hub serves it: "endless", "drip", "redirect" (302 to the same file on "localhost")
    hostile: dict[str, str] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)


class _Handler(BaseHTTPRequestHandler):
    hub: FakeHub

    def log_message(self, *args: Any) -> None:  # keep pytest output clean
        pass

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        if self.path.startswith("/api/agent-harnesses"):  # huggingface_hub's own start-up lookup, not bench's
            return self._error(404, "EntryNotFound")
        self.hub.requests.append(f"{self.headers.get('Host')} {self.command} {self.path}")
        parts = [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]
        if parts[:1] == ["api"] and len(parts) >= 6:
            kind, repo_id, what, rev = parts[1], "/".join(parts[2:4]), parts[4], parts[5]
            repo, commit = self._find(kind, repo_id, rev)
            if repo is None or commit is None:
                return
            files = repo.trees[commit]
            if what == "revision":
                info = {"id": repo_id, "sha": commit, "private": False, "siblings": [{"rfilename": p} for p in files]}
                return self._json(info)
            if what == "tree":
                return self._json([self._entry(p, data) for p, data in sorted(files.items())])
        kind = "datasets" if parts[:1] == ["datasets"] else "models"
        parts = parts[1:] if kind == "datasets" else parts
        if len(parts) >= 5 and parts[2] == "resolve":
            repo, commit = self._find(kind, "/".join(parts[:2]), parts[3])
            if repo is None or commit is None:
                return
            path = "/".join(parts[4:])
            data = repo.trees[commit].get(path)
            if data is None:
                return self._error(404, "EntryNotFound", commit)
            mode = self.hub.hostile.get(path)
            if mode == "redirect" and self.headers.get("Host", "").startswith("127.0.0.1"):
                self.send_response(302)
                self.send_header("Location", self.hub.url.replace("127.0.0.1", "localhost") + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if mode in ("endless", "drip") and body:
                return self._hostile(mode)
            lfs = path.endswith(LFS_SUFFIXES)
            etag = _sha256(data) if lfs else _blob_id(data)
            self.send_response(200)
            self.send_header("X-Repo-Commit", commit)
            self.send_header("ETag", f'"{etag}"')
            if lfs:
                self.send_header("X-Linked-Etag", f'"{etag}"')
                self.send_header("X-Linked-Size", str(len(data)))
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            if body:
                self.wfile.write(data)
            return
        self._error(404, "RepoNotFound")

    def _hostile(self, mode: str) -> None:
        self.send_response(200)
        self.end_headers()  # no Content-Length
        try:
            while not self.hub.stop.is_set():
                self.wfile.write(b"\0" * (1 << 16) if mode == "endless" else b"x")
                self.wfile.flush()
                if mode == "drip":
                    self.hub.stop.wait(0.2)
        except OSError:
            pass

    def _find(self, kind: str, repo_id: str, rev: str) -> tuple[FakeRepo | None, str | None]:
        repo = self.hub.repos.get((kind, repo_id))
        if repo is None:
            self._error(404, "RepoNotFound")
            return None, None
        commit = repo.refs.get(rev, rev if rev in repo.trees else None)
        if commit is None:
            self._error(404, "RevisionNotFound")
        return repo, commit

    @staticmethod
    def _entry(path: str, data: bytes) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "file", "path": path, "size": len(data), "oid": _blob_id(data)}
        if path.endswith(LFS_SUFFIXES):
            entry["lfs"] = {"oid": _sha256(data), "size": len(data), "pointerSize": 134}
        return entry

    def _json(self, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(data)

    def _error(self, status: int, code: str, commit: str | None = None) -> None:
        data = json.dumps({"error": code}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", code)
        if commit:
            self.send_header("X-Repo-Commit", commit)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(data)


def tiny_checkpoint() -> dict[str, bytes]:
    """A tiny BERT repo as the hub holds one: what the loader reads, plus files it must not download."""
    from safetensors.torch import save

    from systems.backbone import tiny_backbone, tiny_vocab

    vocab = tiny_vocab()
    model = tiny_backbone(vocab_size=len(vocab), hidden=32, layers=1, heads=2, max_position=64)
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    pickled = io.BytesIO()
    torch.save(state, pickled)
    return {
        "config.json": json.dumps(model.config.to_hf()).encode(),
        "model.safetensors": save(state),
        "pytorch_model.bin": pickled.getvalue(),  # a second format of the same weights: not downloaded
        "tf_model.h5": b"not read by this harness",
        "vocab.txt": ("\n".join(vocab) + "\n").encode(),
        "README.md": b"# tiny test model\n",
    }


@pytest.fixture(autouse=True)
def only_localhost(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Fail the test when anything looks up a host other than this machine (e.g. huggingface.co)."""
    real = socket.getaddrinfo
    tried: list[str] = []

    def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in ("127.0.0.1", "localhost", "::1"):
            tried.append(name)
            raise OSError(f"test_fetch: no network beyond localhost (tried {name})")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    yield tried
    assert not tried, f"a test tried to reach {tried}"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """The local hub, with HF_ENDPOINT and the HF cache pointed at it and at tmp_path."""
    repos = {("models", REPO): FakeRepo()}
    repos["models", REPO].add("main", tiny_checkpoint())
    fake = FakeHub("", repos, [])
    handler = type("Handler", (_Handler,), {"hub": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", fake.url)
    # huggingface_hub reads HF_ENDPOINT once, at import, into constants it uses where no endpoint is passed (its
    # URL template; a registry lookup when it draws progress bars). They name the same server as "localhost",
    # while bench passes the endpoint it reads at call time ("127.0.0.1"): the teardown checks that every request
    # bench made named the endpoint of HF_ENDPOINT.
    decoy = fake.url.replace("127.0.0.1", "localhost")
    monkeypatch.setattr(hf_constants, "ENDPOINT", decoy)
    monkeypatch.setattr(hf_constants, "HUGGINGFACE_CO_URL_TEMPLATE", decoy + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(hf_constants, "AGENT_HARNESSES_PATH", str(tmp_path / "hf" / ".agent_harnesses.json"))
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "BENCH_CHECKPOINTS", "BENCH_XSUM", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setitem(bench_hub.HUB_ALIASES, NAME, REPO)
    try:
        yield fake
    finally:
        fake.stop.set()
        server.shutdown()
        server.server_close()
    assert all(r.startswith("127.0.0.1:") or "redirect" in fake.hostile.values() for r in fake.requests), fake.requests


def _wide_cli(monkeypatch: pytest.MonkeyPatch) -> Any:
    """bench.cli's consoles, wide enough that table cells are not wrapped (CliRunner is no terminal)."""
    from rich.console import Console

    from bench.cli import common as cli  # every command module prints through bench.cli.common's consoles

    monkeypatch.setattr(cli, "console", Console(width=400))
    monkeypatch.setattr(cli, "err_console", Console(width=400, stderr=True))
    return cli.app


# --- planning ------------------------------------------------------------------------------------------------
def test_checkpoint_names_follow_the_describe_labels() -> None:
    names = fetch.checkpoint_names
    assert names("bert-base-uncased", {}) == ["bert-base-uncased"]
    assert names("random:bert-base-uncased", {"weights": "pretrained"}) == ["bert-base-uncased"]  # reads its vocab
    assert names("minilm-l6 (stands in for bert-large-cased)", {}) == ["minilm-l6"]
    assert names("bert2bert:minilm-l6", {}) == ["minilm-l6"]
    assert names("bert-large-cased", {"weights": "unilm1-large-cased.bin"}) == ["bert-large-cased",
                                                                                "unilm1-large-cased"]
    for nothing in ("none", "none (random init, fairseq)", "tiny", "tiny-bart", "random:tiny(minilm-l6 vocab)",
                    "random:bert-base shape (bert-base-uncased vocab, untrained; timing only)"):
        assert names(nothing, {}) == [], nothing


def test_plan_reads_the_checkpoints_off_the_built_systems(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(bench_hub.HUB_ALIASES, NAME, REPO)
    plan = fetch.plan_systems([
        ("encoder_bert", "paper", {"backbone": NAME}),
        ("unilm", "paper", {}),
        ("fairseq_cmlm", "paper", {}),
        ("encoder_bert", "smoke", {}),
        ("encoder_bert", "paper", {"weights": "random"}),
        ("encoder_unilm", "paper", {}),
    ])
    needs = {n.name: n for n in plan.needs}
    assert set(needs) == {NAME, "bert-large-cased", "unilm1-large-cased", "unilm1.2-base-uncased"}
    assert needs[NAME].hub_id == REPO and needs[NAME].wanted_by == ("encoder_bert@paper",)
    assert needs["unilm1-large-cased"].hub_id == "microsoft/unilm-large-cased"
    assert needs["unilm1.2-base-uncased"].hub_id is None and "MIST README" in needs["unilm1.2-base-uncased"].manual
    assert [line.split(":")[0] for line in plan.nothing] == ["fairseq_cmlm@paper", "encoder_bert@smoke",
                                                             "encoder_bert@paper"]


# --- checkpoints -----------------------------------------------------------------------------------------------
def test_fetch_downloads_checks_records_and_then_finds_it_present(hub: FakeHub, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    files = hub.repos["models", REPO].trees[hub.repos["models", REPO].refs["main"]]
    commit = hub.repos["models", REPO].refs["main"]
    [out] = fetch.fetch_plan(fetch.plan_checkpoints([NAME]))
    assert out.status == "fetched", out.detail
    path = Path(out.where)
    assert path.is_relative_to(tmp_path / "hf" / "hub") and path.name == commit
    # only what the loader reads: config, one weights format (safetensors preferred), the vocab
    assert sorted(p.name for p in path.iterdir()) == ["config.json", "fetch-manifest.json", "model.safetensors",
                                                      "vocab.txt"]
    manifest = json.loads((path / "fetch-manifest.json").read_text())
    assert (manifest["hub_id"], manifest["revision"], manifest["commit"]) == (REPO, "main", commit)
    assert manifest["files"]["model.safetensors"]["sha256"] == _sha256(files["model.safetensors"])

    [again] = fetch.fetch_plan(fetch.plan_checkpoints([NAME]))
    assert again.status == "present" and commit[:12] in again.detail and again.where == str(path)

    # a compute node without internet now loads it from the cache
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    n_requests = len(hub.requests)
    from systems.backbone import load_backbone

    model, tok, info = load_backbone(NAME)
    assert info["path"] == str(path) and tok.vocab_size == model.config.vocab_size
    assert len(hub.requests) == n_requests


def test_fetch_into_bench_checkpoints_refuses_a_corrupted_file_until_forced(hub: FakeHub, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    app = _wide_cli(monkeypatch)
    monkeypatch.setenv("BENCH_CHECKPOINTS", str(tmp_path / "ckpt"))
    dest = tmp_path / "ckpt" / NAME
    first = CliRunner().invoke(app, ["fetch", "--checkpoint", NAME])
    assert first.exit_code == 0, first.output
    assert "fetched" in first.output
    assert (dest / "model.safetensors").is_file() and (dest / "fetch-manifest.json").is_file()
    assert bench_hub.resolve_checkpoint(NAME) == dest

    weights = dest / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    broken = CliRunner().invoke(app, ["fetch", "--checkpoint", NAME])
    assert broken.exit_code == 1, broken.output
    assert "failed" in broken.output and "changed after it was fetched" in broken.output
    assert f"bench fetch --checkpoint {NAME} --force" in broken.output

    forced = CliRunner().invoke(app, ["fetch", "--checkpoint", NAME, "--force"])
    assert forced.exit_code == 0, forced.output
    assert "fetched" in forced.output and fetch.check_present(dest, REPO)[0] == []


def test_truncated_weights_fail_the_content_check(hub: FakeHub, tmp_path: Path) -> None:
    copy = tmp_path / "by-hand"
    copy.mkdir()
    files = tiny_checkpoint()
    for name in ("config.json", "vocab.txt"):
        (copy / name).write_bytes(files[name])
    (copy / "model.safetensors").write_bytes(files["model.safetensors"][:-100])
    [out] = fetch.fetch_plan(fetch.plan_checkpoints([str(copy)]))
    assert out.status == "failed" and "model.safetensors does not load" in out.detail
    (copy / "model.safetensors").write_bytes(files["model.safetensors"])
    (copy / "vocab.txt").unlink()
    [out] = fetch.fetch_plan(fetch.plan_checkpoints([str(copy)]))
    assert out.status == "failed" and "no tokenizer vocabulary" in out.detail


def test_the_project_pins_are_checked(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = hub.repos["models", REPO]
    commit = repo.refs["main"]
    good = _sha256(repo.trees[commit]["model.safetensors"])
    monkeypatch.setitem(bench_hub.PINNED, REPO, bench_hub.Pin(commit, {"model.safetensors": good}))
    [out] = fetch.fetch_plan(fetch.plan_checkpoints([NAME]))
    assert out.status == "fetched", out.detail
    monkeypatch.setitem(bench_hub.PINNED, REPO, bench_hub.Pin(commit, {"model.safetensors": "0" * 64}))
    [out] = fetch.fetch_plan(fetch.plan_checkpoints([NAME]))
    assert out.status == "failed" and "the project pins 000000000000" in out.detail


def test_a_pinned_revision_is_fetched_instead_of_the_branch_head(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = hub.repos["models", REPO]
    old = repo.refs["main"]
    newer = dict(repo.trees[old], **{"README.md": b"# a newer head\n"})
    repo.add("main", newer)
    monkeypatch.setitem(bench_hub.PINNED, REPO, bench_hub.Pin(old))
    [out] = fetch.fetch_plan(fetch.plan_checkpoints([NAME]))
    assert out.status == "fetched" and Path(out.where).name == old, out.detail
    assert bench_hub.find_local_checkpoint(NAME) == Path(out.where)  # found offline by the pinned commit


def test_resolve_checkpoint_downloads_when_online_and_names_bench_fetch_when_offline(
        hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError) as offline:
        bench_hub.resolve_checkpoint(NAME)
    msg = str(offline.value)
    assert "\n" not in msg and f"'{NAME}' ({REPO}) not found" in msg and "hub is offline" in msg
    assert f"`bench fetch --checkpoint {NAME}`" in msg and "$BENCH_CHECKPOINTS" in msg
    assert hub.requests == []

    monkeypatch.delenv("HF_HUB_OFFLINE")
    path = bench_hub.resolve_checkpoint(NAME)
    assert sorted(p.name for p in path.iterdir()) == ["config.json", "model.safetensors", "vocab.txt"]
    assert any("/resolve/" in r for r in hub.requests)

    with pytest.raises(FileNotFoundError) as missing:
        bench_hub.resolve_checkpoint("bench-test/no-such-model")
    msg = str(missing.value)
    assert "\n" not in msg and "could not give it (RepositoryNotFoundError" in msg and "bench fetch --checkpoint" in msg


def test_names_without_a_hub_copy_never_touch_the_network(hub: FakeHub) -> None:
    with pytest.raises(FileNotFoundError, match="no public hub copy is known"):
        bench_hub.resolve_checkpoint("no-such-backbone-xyz")
    with pytest.raises(FileNotFoundError, match="MIST README"):
        bench_hub.resolve_checkpoint("unilm1.2-base-uncased")
    [out] = fetch.fetch_plan(fetch.plan_checkpoints(["unilm1.2-base-uncased"]))
    assert out.status == "no hub copy" and not out.ok
    assert hub.requests == []


def test_unilm_v1_weights_file_resolves_to_its_checkpoint(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(bench_hub.HUB_ALIASES, "tiny-test-weights", REPO)
    path = bench_hub.resolve_weights("tiny-test-weights.bin")
    assert (path / "model.safetensors").is_file()
    assert bench_hub.resolve_weights("not-a-weights-name.txt") == Path("not-a-weights-name.txt")


def test_dry_run_lists_what_a_paper_table_needs_without_the_network(hub: FakeHub,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    app = _wide_cli(monkeypatch)
    result = CliRunner().invoke(app, ["fetch", "--paper", "mist", "--table", "1", "--dry-run"])
    assert result.exit_code == 0, result.output
    out = result.output
    for expected in ("google-bert/bert-base-uncased", "microsoft/MiniLM-L12-H384-uncased", "facebook/bart-large",
                     "would fetch", "unilm1.2-base-uncased", "no hub copy", "mist:1/encoder_bert",
                     "Need no checkpoint: mist:1/transformer"):
        assert expected in out, expected
    assert hub.requests == []
    same = CliRunner().invoke(app, ["fetch", "--table", "mist:1", "--dry-run"])
    assert same.exit_code == 0 and "google-bert/bert-base-uncased" in same.output


def test_cli_user_errors_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    app = _wide_cli(monkeypatch)
    for args, message in ((["fetch"], "Nothing to fetch"), (["fetch", "--table", "1"], "--table needs --paper"),
                          (["fetch", "--system", "bart_large", "--budget", "cpu"], "no cpu preset"),
                          (["fetch", "--checkpoint", "x", "--budget", "gpu"], "Unknown budget")):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2 and message in result.output, (args, result.output)


# --- XSum --------------------------------------------------------------------------------------------------------
SPLIT_IDS = {"train": ["101", "102", "103"], "validation": ["201", "202"], "test": ["301", "302"]}
GOLD = ["the cat sat on the mat .", "£ 5 -lrb- five -rrb- for a pie"]
SUMMARIES = {"301": "The cat sat on the mat.", "302": "£5 (five) for a pie"}


def _data_root(tmp_path: Path) -> Path:
    """A data directory shaped like shared/data, with a tiny XSum split file and gold lines."""
    from bench.data import xsum

    root = tmp_path / "data"
    (root / "xsum").mkdir(parents=True)
    (root / xsum.SPLIT_JSON).write_text(json.dumps(SPLIT_IDS))
    (root / xsum.GOLD).write_text("\n".join(GOLD) + "\n")
    sums = [f"{_sha256((root / rel).read_bytes())}  ./{rel}" for rel in (xsum.SPLIT_JSON, xsum.GOLD)]
    (root / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    return root


def _parquet(rows: list[dict[str, str]]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


def _xsum_repo(hub: FakeHub, drop: str | None = None) -> None:
    """EdinburghNLP/xsum as a script-only main branch plus the hub's parquet export (id, document, summary)."""
    repo = FakeRepo()
    repo.add("main", {"xsum.py": b"# a loading script\n", "README.md": b"# XSum\n"})
    export = {}
    for split, ids in SPLIT_IDS.items():
        rows = [{"document": f"document {i}", "summary": SUMMARIES.get(i, f"summary {i}"), "id": i}
                for i in ids if i != drop]
        export[f"default/{split}/0000.parquet"] = _parquet(rows)
    repo.add("refs/convert/parquet", export)
    hub.repos["datasets", "EdinburghNLP/xsum"] = repo


def test_fetch_xsum_downloads_the_export_and_checks_the_pinned_split_ids(hub: FakeHub, tmp_path: Path) -> None:
    from bench.data.xsum import find_full, read_full

    _xsum_repo(hub)
    root = _data_root(tmp_path)
    out = fetch.fetch_xsum(root)
    assert out.status == "fetched", out.detail
    dest = root / "xsum" / "full"
    assert out.where == str(dest) and find_full(root) == dest
    assert "train 3 / validation 2 / test 2" in out.detail and "2 of 2 test summaries" in out.detail
    manifest = json.loads((dest / "fetch-manifest.json").read_text())
    assert manifest["revision"] == "refs/convert/parquet" and manifest["counts"] == {"train": 3, "validation": 2,
                                                                                      "test": 2}
    assert set(read_full(dest)[0]) == {i for ids in SPLIT_IDS.values() for i in ids}

    again = fetch.fetch_xsum(root)
    assert again.status == "present", again.detail
    assert fetch.fetch_xsum(root, dry_run=True).status == "present"


def test_fetch_xsum_fails_when_the_copy_lacks_an_official_id(hub: FakeHub, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _xsum_repo(hub, drop="202")
    root = _data_root(tmp_path)
    monkeypatch.setenv("BENCH_XSUM", str(tmp_path / "xsum-copy"))
    out = fetch.fetch_xsum(root)
    assert out.status == "failed" and "lacks 1 of 2 validation ids (e.g. 202)" in out.detail
    assert out.where == str(tmp_path / "xsum-copy")


def test_fetch_xsum_dry_run_and_offline(hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _data_root(tmp_path)
    assert fetch.fetch_xsum(root, dry_run=True).status == "would fetch"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = fetch.fetch_xsum(root)
    assert out.status == "failed" and "offline" in out.detail
    assert hub.requests == []


# --- a hostile hub (#57): checkpoint files are bounded by the hub's own listing -------------------------------------
def test_a_weights_file_with_an_endless_body_stops_at_its_listed_size(hub: FakeHub, tmp_path: Path) -> None:
    import time

    hub.hostile["model.safetensors"] = "endless"
    started = time.monotonic()
    [out] = fetch.fetch_plan(fetch.plan_checkpoints([NAME]))
    assert out.status == "failed" and "-byte cap of this file" in out.detail, out.detail
    assert time.monotonic() - started < 10
    written = sum(p.stat().st_size for p in (tmp_path / "hf").rglob("*") if p.is_file())
    assert written < 2 * len(tiny_checkpoint()["model.safetensors"]) + 100_000, written


def test_a_dripping_hub_is_a_stall(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from bench.api import download

    monkeypatch.setattr(download, "STALL_S", 1.0)
    hub.hostile["vocab.txt"] = "drip"
    started = time.monotonic()
    [out] = fetch.fetch_plan(fetch.plan_checkpoints([NAME]))
    assert out.status == "failed" and "stalled" in out.detail, out.detail
    assert time.monotonic() - started < 6


def test_a_redirect_to_another_host_is_named_in_the_fetch_row(hub: FakeHub) -> None:
    hub.hostile["model.safetensors"] = "redirect"
    [out] = fetch.fetch_plan(fetch.plan_checkpoints([NAME]))
    assert out.status == "fetched", out.detail
    assert f"redirected to {hub.url.replace('127.0.0.1', 'localhost').split('//')[1]}" in out.detail


def test_a_listed_path_outside_the_folder_is_refused(hub: FakeHub, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_CHECKPOINTS", str(tmp_path / "ckpt"))
    remote = bench_hub.RemoteFile("../../outside.txt", 3, _blob_id(b"abc"))
    with pytest.raises(ValueError, match="outside its folder"):
        bench_hub.download_files(REPO, "0" * 40, [remote], tmp_path / "ckpt" / NAME)
    assert not (tmp_path / "outside.txt").exists()


def test_a_symlinked_part_in_the_checkpoint_folder_is_not_written_through(hub: FakeHub, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_CHECKPOINTS", str(tmp_path / "ckpt"))
    files = tiny_checkpoint()
    victim = tmp_path / "outside" / "victim"
    victim.parent.mkdir()
    victim.write_bytes(b"sentinel")
    dest = tmp_path / "ckpt" / NAME
    dest.mkdir(parents=True)
    (dest / f"vocab.txt.{_blob_id(files['vocab.txt'])[:16]}.part").symlink_to(victim)
    [out] = fetch.fetch_plan(fetch.plan_checkpoints([NAME]), force=True)
    assert out.status == "failed" and "symbolic link" in out.detail, out.detail
    assert victim.read_bytes() == b"sentinel"
