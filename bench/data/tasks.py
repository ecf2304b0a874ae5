"""Task definitions: what each benchmark task is, its splits with expected sizes, and its builder.

Why a versioned, declarative record: a published number is only comparable when its split is the
same, so each split states its expected count (and, once pinned, the sha256 of its canonical
content); changing how a split is built means bumping ``version``, which invalidates caches and
makes every stored result name the split version it was computed on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from bench.api.registry import Registry
from bench.api.tasks import SplitSpec, Task, splits
from bench.api.types import Example, TaskInfo


def task_info(name: str, train: Sequence[Example] = (), dev: Sequence[Example] = ()) -> TaskInfo:
    """What a system may know of task ``name`` (its limits and family, never the task object), with the
    training splits where they are loaded: the one way the harness hands a task to a system."""
    task = TASKS.get(name)
    return TaskInfo(task.name, tuple(train), tuple(dev), task.max_source_len, task.max_target_len, task.family)


_MIST_LENS: dict[str, Any] = {"max_source_len": 464, "max_target_len": 48}  # MIST paper, section "Settings"

_SQUAD_FILES = (
    "squad/train-v1.1.reconstructed.json|squad/train-v1.1.json",  # shared copy | official (bench fetch --data)
    "squad/dev-v1.1.json",
    "du2017/doclist-train.txt",
    "du2017/doclist-dev.txt",
    "du2017/doclist-test.txt",
    "du2017/src-dev.txt",
    "du2017/tgt-dev.txt",
    "du2017/src-test.txt",
    "du2017/tgt-test.txt",
)
_DU_CITATION = (
    "Du, Shao and Cardie (2017). Learning to Ask: Neural Question Generation for Reading "
    "Comprehension. ACL. Rajpurkar et al. (2016). SQuAD: 100,000+ Questions for Machine "
    "Comprehension of Text. EMNLP."
)
_TRAIN_NOTE = (
    "398 Du train articles from squad/train-v1.1.reconstructed.json; SQuAD ids are null there, so "
    "ids are synthetic ('<title>/p<paragraph>/q<question>') and answer_start is the first "
    "occurrence of the answer text"
)

SQUAD_QG = Task(
    name="squad_qg",
    version=1,
    family="qg",
    splits=splits(
        SplitSpec(
            "train",
            75_722,
            note=_TRAIN_NOTE,
            sha256="2ecab62ac45df3822650a2647dec7a29c38c14af23617d9d3b86a471615a4329",
        ),
        SplitSpec(
            "dev",
            10_570,
            note="Du et al. 2017 dev = official SQuAD v1.1 dev (48 articles)",
            sha256="f166b8981c5bd2c514f86560b053867558dfe8daaa0f9a8d40cfc567a389969c",
        ),
        SplitSpec(
            "test",
            11_877,
            note="Du et al. 2017 test = 44 articles of the official train set",
            sha256="4dcc96d39dc01cab6af6746ad084c17c29cb1f4e496cc1789f81727cbe7b2075",
        ),
    ),
    default_recipes=("nqg", "unilm", "mist", "unilm-tok"),  # unilm-tok: the ERNIE-GEN tables
    recipes=("nqg", "unilm", "unilm-tok", "glge", "mist", "sacrebleu"),
    **_MIST_LENS,
    description=(
        "Answer-aware question generation on SQuAD v1.1, Du et al. (2017) article-level split. "
        "source = 'answer [SEP] paragraph', target = the raw question; dev/test carry du_key "
        "(Du source sentence, the scoring group key) and du_ref (Du tokenized question)."
    ),
    citation=_DU_CITATION,
    builder="bench.data.squad:build",
    raw_files=_SQUAD_FILES,
    key_field="du_key",
)


def with_dev_test_swapped(
    base: Task, name: str, *, dev_note: str, test_note: str, description: str, citation: str
) -> Task:
    """``base`` with its dev and test splits exchanged (same builder, run with ``reversed_dev_test``).

    Counts, pinned sha256 values, version, lengths and raw files all come from ``base``, so the two
    tasks cannot drift apart; only the name, the notes and the prose are the reversed task's own.
    """
    dev, test = base.split("dev"), base.split("test")
    return replace(
        base,
        name=name,
        splits=splits(base.split("train"), replace(test, name="dev", note=dev_note),
                      replace(dev, name="test", note=test_note)),
        description=description,
        citation=citation,
        reversed_dev_test=True,
        train_from=base.train_from or base.name,
    )


SQUAD_QG_REVERSED = with_dev_test_swapped(
    SQUAD_QG,
    "squad_qg_reversed",
    dev_note="reversed split: dev = Du et al. 2017 test",
    test_note="reversed split: test = Du et al. 2017 dev (official SQuAD dev)",
    description=(
        "squad_qg with dev and test swapped (Zhao et al. 2018): test = official SQuAD v1.1 dev "
        "(10,570 questions, 6,795 Du keys), dev = Du test."
    ),
    citation=_DU_CITATION + " Zhao et al. (2018). Paragraph-level Neural Question Generation with "
    "Maxout Pointer and Gated Self-attention Networks. EMNLP.",
)

QUORA = Task(
    name="quora",
    version=1,
    family="paraphrase",
    splits=splits(
        SplitSpec(
            "train", 100_000, sha256="3bc0021adf295c23e07235fcd3c5d2bd99cb4e94a4ec31c0c19a6ad21ceb5b96"
        ),
        SplitSpec(
            "dev",
            2_797,
            note="duji2019 val",
            sha256="4116adf612bde97249f78ac39d362c6478680c0922c30fc9c91cbb8fcb057b29",
        ),
        SplitSpec("test", 30_000, sha256="0beb27398f33aa61b11790efcb5e8885117889bfec1a8a451d71609143303132"),
    ),
    default_recipes=("mist-quora",),
    recipes=("mist-quora", "sacrebleu"),
    **_MIST_LENS,
    description=(
        "Quora question-pair paraphrase generation, split of Du & Ji (2019) following Li et al. "
        "(2018); text is lowercased and tokenized as distributed. Not verified to be the split "
        "used by MIST/BANG."
    ),
    citation=(
        "Du and Ji (2019). An Empirical Comparison on Imitation Learning and Reinforcement "
        "Learning for Paraphrase Generation. EMNLP. Li et al. (2018). Paraphrase Generation with "
        "Deep Reinforcement Learning. EMNLP."
    ),
    builder="bench.data.quora:build",
    raw_files=tuple(f"quora/duji2019/{s}.{e}" for s in ("train", "val", "test") for e in ("src", "tgt")),
    key_field="key",
)

_XSUM_CITATION = (
    "Narayan, Cohen and Lapata (2018). Don't Give Me the Details, Just the Summary! Topic-Aware "
    "Convolutional Neural Networks for Extreme Summarization. EMNLP."
)
_FULL_NOTE = (
    "built from the user's full XSum copy ($BENCH_XSUM or <data dir>/xsum/full; see bench.data.xsum), "
    "in split-file order; targets are its cased summaries (test: fields['gold'] is the gold line)"
)

XSUM = Task(
    name="xsum",
    version=1,
    family="summarization",
    splits=splits(
        SplitSpec("train", 204_045, note=_FULL_NOTE, optional=True),
        SplitSpec("validation", 11_332, note=_FULL_NOTE, optional=True),
        SplitSpec("test", 11_334, note=_FULL_NOTE, optional=True),
        SplitSpec(
            "test-refs",
            11_334,
            references_only=True,
            sha256="9bdb0356e72f590cfee88862fd643776a3b1ba65a9f563d08b4f4e81495d01ca",
            note="references only: all 11,334 test ids with their gold-test-sentences.txt line; "
            "documents are empty, so use it only to score outputs produced elsewhere",
        ),
        SplitSpec(
            "test-available",
            4_034,
            partial=True,
            optional=True,  # needs xsum/documents-recovered.jsonl, which has no single public source
            sha256="79b2e14f208b64602a1d55ddfa5a3337bb519f27a0c308f6da1e944c996c946b",
            note="PARTIAL: 4,034 of 11,334 test documents (recovered from public subsets); targets "
            "are the gold-test-sentences.txt lines (lowercased, PTB-tokenized); the recovered cased "
            "summary is fields['summary_recovered'] and matches the gold line for 4,033 of them",
        ),
        SplitSpec(
            "validation-available",
            1_079,
            partial=True,
            optional=True,
            sha256="e8929902b407a6786f6319cf4b26c25aa2cca8cc736ac762ccb6d004871587ee",
            note="PARTIAL: 1,079 of 11,332 validation documents (recovered from public subsets); "
            "targets are the recovered summaries, empty for 79 ids that have none",
        ),
    ),
    default_recipes=("rouge155", "rouge-pltrdy", "rouge-score"),
    recipes=("rouge155", "rouge-pltrdy", "rouge-score"),
    **_MIST_LENS,
    description=(
        "Extreme summarization of BBC articles (XSum). Full splits need the full corpus (`bench fetch "
        "--data` gets it); the shared data supports scoring on the full test references and running on the "
        "recovered subsets, which are marked partial."
    ),
    citation=_XSUM_CITATION,
    builder="bench.data.xsum:build",
    raw_files=(
        "xsum/XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json",
        "xsum/gold-test-sentences.txt",
        "xsum/documents-recovered.jsonl?",  # optional: the -available splits, where the full corpus is absent
    ),
)

def _check_task(name: str, task: Any) -> None:
    from bench.api.registry import check_named

    check_named("task", name, task, Task, "a bench.data.tasks.Task", "Task")


#: installed plugins add tasks through the ``bench.tasks`` entry-point group (bench.env.plugins)
TASKS: Registry[Task] = Registry("task", entry_point_group="bench.tasks", check=_check_task)
for _task in (SQUAD_QG, SQUAD_QG_REVERSED, QUORA, XSUM):
    TASKS.register(_task.name, _task, family=_task.family, description=_task.description)
