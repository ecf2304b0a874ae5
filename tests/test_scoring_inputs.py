"""Bad input gets a clear error (never a sentinel score); quirks of line reading are explicit."""

import os
import re
import stat
import sys
from pathlib import Path

import pytest

from bench.api.types import Example, Split
from bench.scoring import RECIPES, ScoringInputError, ToolFailedError, ToolMissingError, score_files
from bench.scoring.inputs import read_lines
from bench.scoring.meteor import MeteorProcess
from bench.scoring.recipe import group_last


def _split(n: int = 3) -> Split:
    exs = tuple(Example(id=f"q{i}", source=f"ans{i} [SEP] para {i}", target=f"What is {i}?",
                        fields={"du_key": f"sentence {i // 2}", "du_ref": f"what is {i} ?"})
                for i in range(n))
    return Split(task="squad_qg", name="test", examples=exs, sha256="0" * 64)


def _write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return p


def test_line_count_mismatch_names_both_counts_and_files(tmp_path):
    hyp = _write(tmp_path, "hyp.txt", "a\nb\n")
    ref = _write(tmp_path, "ref.txt", "a\nb\nc\n")
    key = _write(tmp_path, "key.txt", "k\nk\nk\n")
    with pytest.raises(ScoringInputError) as err:
        score_files("nqg", hyp, ref, key, bootstrap=0)
    msg = str(err.value)
    assert "2 hypotheses" in msg and "3 references" in msg and str(hyp) in msg and str(ref) in msg


def test_split_count_mismatch():
    from bench.scoring import score_split

    with pytest.raises(ScoringInputError, match=r"2 hypotheses .* vs 3 references"):
        score_split("sacrebleu", ["a", "b"], _split(3))


def test_invalid_utf8_names_file_and_line(tmp_path):
    p = _write(tmp_path, "hyp.txt", b"ok\nfine\nbad \xff byte\n")
    with pytest.raises(ScoringInputError, match=rf"{p}:3: invalid UTF-8 \(byte 0xff at column 5\)"):
        read_lines(p)


@pytest.mark.parametrize("bad, what", [("a\nb", "a newline"), ("a ||| b", "'|||'"), ("a\rb", "a newline")])
def test_forbidden_characters_in_hypotheses(bad, what):
    recipe = RECIPES.get("nqg")
    with pytest.raises(ScoringInputError, match=re.escape(f"hypothesis 2 (id q1) contains {what}")):
        recipe.prepare_split(["x", bad, "y"], _split(3))


def test_missing_key_file_for_grouping_recipe(tmp_path):
    hyp = _write(tmp_path, "hyp.txt", "a\n")
    with pytest.raises(ScoringInputError, match="pass a key file"):
        score_files("unilm", hyp, hyp, None, bootstrap=0)


def test_missing_final_newline_is_reported_and_legacy_drops_last_char(tmp_path):
    p = _write(tmp_path, "hyp.txt", "first\nlast")
    lines = read_lines(p)
    assert lines.lines == ["first", "last"] and not lines.final_newline
    assert lines.legacy() == ["first", "las"]
    assert "no final newline" in lines.notes("hypothesis", True)[0]
    assert read_lines(_write(tmp_path, "ok.txt", "a\n")).notes("hypothesis", True) == []


def test_empty_hypotheses_are_counted_not_hidden():
    items = RECIPES.get("nqg").prepare_split(["", "b", "  "], _split(3))
    assert items.notes == ["2 empty hypotheses (scored as empty strings)"]


def test_grouping_last_prediction_wins_and_refs_pool_in_order():
    items = group_last(["k1", "k2", "k1", "k1"], ["h1", "h2", "h3", "h4"], ["r1", "r2", "r3", "r4"])
    assert items.keys == ["k1", "k2"]
    assert items.hyps == ["h4", "h2"]
    assert items.refs == [["r1", "r3", "r4"], ["r2"]]


def test_pltrdy_empty_hypothesis_scored_zero_and_counted():
    from bench.scoring import score_split

    sc = score_split("rouge-pltrdy", ["what is 0 ?", "", "what is 2 ?x"], _split(3), bootstrap=0)
    assert sc.metrics["rouge1"] < 100 and any("1 hypotheses empty" in n for n in sc.notes)
    assert sc.notes[0] == "1 empty hypotheses (scored as empty strings)"


def test_missing_java_says_what_to_install(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolMissingError, match="apt-get install default-jre-headless"):
        MeteorProcess()


def test_missing_perl_says_what_to_install(monkeypatch):
    from bench.scoring.rouge155 import check_perl

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolMissingError, match="apt-get install perl libxml-parser-perl"):
        check_perl()


def test_missing_meteor_paraphrase_table_is_named(monkeypatch, tmp_path):
    import pycocoevalcap.meteor.meteor as mod

    from bench.scoring.meteor import meteor_jar

    (tmp_path / "meteor-1.5.jar").write_bytes(b"")
    monkeypatch.setattr(mod, "__file__", str(tmp_path / "meteor.py"))
    with pytest.raises(ToolMissingError, match="paraphrase-en.gz"):
        meteor_jar()


def _fake_java(tmp_path: Path, body: str) -> str:
    p = tmp_path / "java"
    p.write_text(f"#!{sys.executable}\n{body}")
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return str(p)


def test_meteor_dying_twice_fails_with_its_stderr(tmp_path):
    java = _fake_java(tmp_path, "import sys\nsys.stderr.write('Exception: java.lang.OutOfMemoryError\\n')\n"
                                "sys.exit(1)\n")
    proc = MeteorProcess(java=java)
    with pytest.raises(ToolFailedError) as err:
        proc.stats(["SCORE ||| a ||| a"])
    assert "died twice" in str(err.value) and "OutOfMemoryError" in str(err.value)
    assert proc.starts == 2


def test_meteor_dying_once_is_retried(tmp_path):
    marker = tmp_path / "died"
    body = (f"import os, sys\nif not os.path.exists({str(marker)!r}):\n"
            f"    open({str(marker)!r}, 'w').close(); sys.exit(3)\n"
            "for line in sys.stdin:\n"
            "    print(' '.join(['1.0'] * 23), flush=True)\n")
    proc = MeteorProcess(java=_fake_java(tmp_path, body))
    try:
        assert proc.stats(["SCORE ||| a ||| a", "SCORE ||| b ||| b"]) == [" ".join(["1.0"] * 23)] * 2
    finally:
        proc.close()
    assert proc.starts == 2 and os.path.exists(marker)
