"""Golden decodes (#41): each family's smoke model, trained and decoded with fixed seeds on one thread, gives
byte-identical outputs to the ones recorded before the code was moved into layers. A refactor that changes
what a system decodes fails here; a deliberate change regenerates the file with BENCH_REGEN_GOLDEN=1."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from toy_training import qg_examples

from bench.api.types import TaskInfo
from systems import build

GOLDEN = Path(__file__).parent / "fixtures" / "golden_decodes.json"
#: one system per family and per distinct decode path
SYSTEMS = ("unilm", "unilm_s2sft", "copybert_selfcopy", "erniegen_base", "bert2bert_minilm_l6", "encoder_minilm_l6",
           "mist_minilm_l6", "fairseq_transformer", "fairseq_cmlm", "copy_source")


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _decode(name: str, workdir: Path) -> list[str]:
    from bench.env.device import fit_on

    if name.startswith("fairseq_"):
        pytest.importorskip("fairseq", reason="fairseq baselines need `make fairseq`")
    task = TaskInfo("squad_qg", qg_examples(96, 0), qg_examples(8, 1), 464, 48)
    system = build(name, "smoke", {"seed": 7})
    fit_on(system, task, workdir, "cpu")
    examples = list(task.dev[:6])
    return [*system.decode(examples), system.decode_one(examples[0])]


@pytest.mark.parametrize("name", SYSTEMS)
def test_decodes_are_byte_identical_to_the_golden_ones(name: str, tmp_path: Path) -> None:
    outputs = _decode(name, tmp_path)
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.is_file() else {}
    if os.environ.get("BENCH_REGEN_GOLDEN") == "1":
        golden[name] = outputs
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1, ensure_ascii=False) + "\n")
        pytest.skip("regenerated")
    assert name in golden, f"no golden decode for {name}: run with BENCH_REGEN_GOLDEN=1 on the code before the change"
    assert outputs == golden[name]
