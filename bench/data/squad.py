"""Builder for SQuAD v1.1 question generation on the Du et al. (2017) article-level split.

Train and test articles come from the (reconstructed) official train set, dev from the official
dev set; articles follow ``du2017/doclist-*.txt`` order, paragraphs and questions follow JSON
order. In that order question i of dev/test is line i of ``du2017/{src,tgt}-*.txt``, which gives
each question its Du scoring key. The alignment is checked on every line, because a silent
off-by-one would corrupt every grouped BLEU/METEOR score computed on the split.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bench.api.errors import DataError
from bench.api.reading import read_json
from bench.api.tasks import Built, Task, read_lines
from bench.api.types import Example
from bench.data.sentences import sentence_containing
from bench.data.sources import DATA_FIX, present

TRAIN_JSON = "squad/train-v1.1.reconstructed.json"
#: the shared reconstruction, else the official file (``bench fetch --data``); both give the same splits
#: because train examples are normalised the way the reconstruction is made (see :func:`_examples`)
TRAIN_FILES = f"{TRAIN_JSON}|squad/train-v1.1.json"
DEV_JSON = "squad/dev-v1.1.json"
SEP = " [SEP] "
_NON_ALNUM = re.compile(r"[\W_]+")


def build(task: Task, root: Path) -> Built:
    train_json = present(root, TRAIN_FILES)
    train_articles = _articles_by_title(root / train_json)
    dev_articles = _articles_by_title(root / DEV_JSON)
    train = _examples(_in_doclist_order(root, "train", train_articles, train_json), du_train=True)
    test = _examples(_in_doclist_order(root, "test", train_articles, train_json))
    dev = _examples(_in_doclist_order(root, "dev", dev_articles, DEV_JSON))
    test = _attach_du(root, "test", test)
    dev = _attach_du(root, "dev", dev)
    if task.reversed_dev_test:
        dev, test = test, dev
    return Built(splits={"train": train, "dev": dev, "test": test})


def normalize_question(text: str) -> str:
    """Compare a raw question with Du's tokenized line: lowercase, brackets as PTB tokens, alnum only."""
    return _NON_ALNUM.sub("", text.lower().replace("(", "-lrb-").replace(")", "-rrb-"))


def _articles_by_title(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = read_json(path, DATA_FIX)["data"]
    except (KeyError, TypeError) as e:
        raise DataError(f"{path}: not a SQuAD v1.1 JSON file ({e}).") from e
    return {article["title"]: article for article in data}


def _in_doclist_order(
    root: Path, split: str, articles: dict[str, dict[str, Any]], json_rel: str
) -> list[dict[str, Any]]:
    rel = f"du2017/doclist-{split}.txt"
    out = []
    for lineno, title in enumerate(read_lines(root / rel), 1):
        title = title.strip()
        if not title:
            continue
        if title not in articles:
            raise DataError(f"{root / rel}:{lineno}: article '{title}' is not in {root / json_rel}.")
        out.append(articles[title])
    return out


def _examples(articles: list[dict[str, Any]], du_train: bool = False) -> list[Example]:
    """One example per question; the first gold answer is the answer (dev has up to 3 annotations).

    ``du_train``: the Du train articles, whose ids are null and answer offsets the first occurrence of the
    answer in the reconstructed SQuAD train file; the same is applied to the official file (ids dropped,
    first occurrence), so the train split, and its pinned sha256, is the same whichever file is read.
    """
    out: list[Example] = []
    seen: set[str] = set()
    for article in articles:
        title = article["title"]
        for pi, para in enumerate(article["paragraphs"]):
            context = para["context"]
            for qi, qa in enumerate(para["qas"]):
                answer = qa["answers"][0]
                text, start = answer["text"], -1 if du_train else int(answer["answer_start"])
                if start < 0 or context[start : start + len(text)] != text:
                    found = context.find(text)
                    if found < 0:
                        raise DataError(
                            f"SQuAD article '{title}' paragraph {pi} question {qi}: answer "
                            f"{text!r} is not in its paragraph."
                        )
                    start = found
                ex_id = (None if du_train else qa.get("id")) or f"{title}/p{pi}/q{qi}"
                if ex_id in seen:
                    raise DataError(f"SQuAD article '{title}': duplicate question id {ex_id!r}.")
                seen.add(ex_id)
                fields = {
                    "title": title,
                    "paragraph": context,
                    "answer": text,
                    "answer_start": str(start),
                    "sentence": sentence_containing(context, start, start + len(text)),
                    "question": qa["question"],
                }
                out.append(
                    Example(id=ex_id, source=f"{text}{SEP}{context}", target=qa["question"], fields=fields)
                )
    return out


def _attach_du(root: Path, split: str, examples: list[Example]) -> list[Example]:
    """Add ``du_key``/``du_ref`` from Du's processed files after checking every line aligns."""
    src_rel, tgt_rel = f"du2017/src-{split}.txt", f"du2017/tgt-{split}.txt"
    keys, refs = read_lines(root / src_rel), read_lines(root / tgt_rel)
    if not len(keys) == len(refs) == len(examples):
        raise DataError(
            f"Du {split} files do not match the SQuAD questions: {root / src_rel} has {len(keys)} lines, "
            f"{root / tgt_rel} has {len(refs)}, the doclist order gives {len(examples)} questions."
        )
    out = []
    for i, (ex, key, ref) in enumerate(zip(examples, keys, refs, strict=True)):
        if normalize_question(ex.target) != normalize_question(ref):
            raise DataError(
                f"{root / tgt_rel}:{i + 1}: Du reference {ref!r} does not match SQuAD question "
                f"{ex.target!r} (id {ex.id}) after normalization; the article order or the files "
                "are not the ones the Du split was made from."
            )
        out.append(Example(ex.id, ex.source, ex.target, {**ex.fields, "du_key": key, "du_ref": ref}))
    return out
