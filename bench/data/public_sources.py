"""Where every raw file of the built-in tasks comes from on the public internet, pinned by commit and sha256.

Why: a researcher who clones the repository has no ``../shared/data``; ``bench fetch --data`` rebuilds the
data directory from these public places, and the pins make a changed upstream file fail loudly instead of
silently changing every number. A file's pin is its sha256 in the project's ``SHA256SUMS``. Where the
downloaded file itself has no known hash (the Quora chunks, the XSum predictions archive) the files made
from it are pinned instead, so nothing unverified lands in the data directory.

Every download is bounded (:mod:`bench.api.download`): a file with a pin may be no larger than its pinned size
(:data:`SIZES`); a download whose own hash is not known (a Quora chunk, the XSum predictions archive) no larger
than its stated ceiling (:data:`CHUNK_CEILING`, :data:`ARCHIVE_CEILING`).

Every URL is ``https://HOST/PATH``; ``$BENCH_DATA_MIRROR`` (or ``--mirror URL``) maps each onto
``URL/HOST/PATH`` so that a mirror, or a test's local server, serves all of them from one base.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

MIRROR_ENV = "BENCH_DATA_MIRROR"
RAW = "raw.githubusercontent.com"
SQUAD_HOST = "rajpurkar.github.io"

NQG = "xinyadu/nqg@7f8bb00af7881bb8d8eaedc61e38e4114ff43ac6"
XSUM = "EdinburghNLP/XSum@7b95485c3e861d7caff76a8b4c6b3fd3bf7ee9b1"
QUORA = "wyu-du/Reinforce-Paraphrase-Generation@7c788fd5d70ca4bee9c49db86692ec50f8df2530"
LMQG = "asahi417/lm-question-generation@0ab2263d6a47bb96d053c0f6131cc2caf590e8e3"

#: sha256 of the official SQuAD v1.1 train file (30,288,272 bytes), as its many public users pin it; the
#: shared copy is a reconstruction (squad/train-v1.1.reconstructed.json) with another hash
SQUAD_TRAIN_SHA256 = "3527663986b8295af4f7fcdff1ba1ff3f72d07d61a20f487cb238a6ef92fd955"
SQUAD_TRAIN = "squad/train-v1.1.json"

Kind = Literal["file", "chunked", "tar"]
MiB = 1 << 20
#: the most one Quora chunk may be (1,000 question pairs, about 150 KB each; 100x that)
CHUNK_CEILING = 16 * MiB
#: the most the XSum predictions archive may be, and the most of it that is unpacked (a few MB of text)
ARCHIVE_CEILING = 256 * MiB
ARCHIVE_UNPACKED_CEILING = 1024 * MiB
#: the most members an archive may hold before the walk stops (a tar of a million empty entries is a bomb too)
ARCHIVE_MEMBERS_CEILING = 10_000


@dataclass(frozen=True)
class Output:
    """A file that lands in the data directory: its path there and its pinned sha256. ``member`` names the
    file inside the download it is made from (a tar member's base name, or ``SPLIT.src``/``SPLIT.tgt``)."""

    rel: str
    sha256: str
    member: str = ""
    size: int | None = None  # pinned size in bytes (None: not pinned; the file is then found in an archive by name)


@dataclass(frozen=True)
class Source:
    """One public download (``kind`` file) or set of downloads (chunked: ``paths`` are the chunks) and the
    files made from it. ``sha256`` pins the download itself where its hash is known (None: it is checked
    through its outputs). ``origin`` is ``owner/repo@commit`` or the host, for the listing."""

    name: str
    origin: str
    host: str
    paths: tuple[str, ...]
    outputs: tuple[Output, ...]
    kind: Kind = "file"
    sha256: str | None = None
    note: str = field(default="", compare=False)
    size: int | None = None  # pinned size of the download itself (kind file), in bytes

    def max_bytes(self) -> int:
        """The size cap of each download of this source: its pinned size, else its kind's stated ceiling."""
        if self.size is not None:
            return self.size
        return CHUNK_CEILING if self.kind == "chunked" else ARCHIVE_CEILING

    def urls(self, mirror: str | None = None) -> list[str]:
        """The download URLs, mapped onto ``mirror`` (else ``$BENCH_DATA_MIRROR``) when one is set."""
        base = mirror if mirror is not None else os.environ.get(MIRROR_ENV) or None
        root = f"{base.rstrip('/')}/{self.host}" if base else f"https://{self.host}"
        return [f"{root}/{p}" for p in self.paths]


def _github(origin: str, path: str) -> tuple[str, tuple[str, ...]]:
    repo, commit = origin.split("@")
    return RAW, (f"{repo}/{commit}/{path}",)


def _file(name: str, origin: str, path: str, rel: str, sha: str, note: str = "") -> Source:
    host, paths = _github(origin, path)
    return Source(name, origin, host, paths, (Output(rel, sha, size=SIZES[rel]),), sha256=sha, note=note,
                  size=SIZES[rel])


def _quora() -> Source:
    repo, commit = QUORA.split("@")
    chunks = {"train": 100, "val": 3, "test": 30}  # 1,000 pairs a chunk: 100,000 / 2,797 / 30,000
    paths = tuple(f"{repo}/{commit}/data/quora/chunked/{s}_{i:03d}.bin" for s, n in chunks.items() for i in range(n))
    outs = tuple(Output(f"quora/duji2019/{s}.{e}", SUMS[f"quora/duji2019/{s}.{e}"], f"{s}.{e}",
                        SIZES[f"quora/duji2019/{s}.{e}"]) for s in chunks for e in ("src", "tgt"))
    return Source("quora", QUORA, RAW, paths, outs, kind="chunked",
                  note="tf.Example chunks (article = question, abstract = <s> paraphrase </s>); the chunks' "
                       "own sha256 is not known, the decoded files are pinned")


def _xsum_predictions() -> Source:
    repo, commit = XSUM.split("@")
    outs = (Output("xsum/gold-test-sentences.txt", SUMS["xsum/gold-test-sentences.txt"], "gold-test-sentences.txt",
                   SIZES["xsum/gold-test-sentences.txt"]),
            *(Output(f"xsum/outputs/{m}-test-output.{e}", SUMS[f"xsum/outputs/{m}-test-output.{e}"],
                     f"{m}-test-output.{e}", SIZES[f"xsum/outputs/{m}-test-output.{e}"])
              for m in ("ptgen", "convs2s") for e in ("txt", "rouge")))
    return Source("xsum-predictions", XSUM, RAW, (f"{repo}/{commit}/xsum-model-predictions.tar.gz",), outs,
                  kind="tar", note="the archive's sha256 is not known; its members are pinned (found by base "
                                   "name, else by their pinned hash)")


#: the project's pins (the shared data directory's SHA256SUMS)
SUMS: dict[str, str] = {
    "du2017/LICENSE.nqg": "0ad57f2b2cf80c4b3980c1202b69f38ea2692eb43ac59985aaf70e063cff9108",
    "du2017/doclist-dev.txt": "9f8220717484ad975348e913fde4616dc47ee1f6bd079a694c8c441c68b3f06d",
    "du2017/doclist-test.txt": "2a2b79a476e04276f2fdecbbb991db2ee2a712ecc4ef2f02629d46681f8bd108",
    "du2017/doclist-train.txt": "2c99082b23fcfb6c0d9c12fe6140eedd1690d581b1e7c8d38b36eeca4677d998",
    "du2017/src-dev.txt": "d540a569619c0bd68b46f9eb3d59351206bcdd1d15eeed8dc5a4fd4815a0d872",
    "du2017/src-test.txt": "5714e36b9f3ef884f4e109e876f4e507d61f58a1241b4fb0403866dfdeef315d",
    "du2017/tgt-dev.txt": "68e293bd31cd223ac95ed3090726c8b83041f99984961bbc4164250dac304782",
    "du2017/tgt-test.txt": "e75710df557c2432925c8f2ca17e9b490235ce3c647c857fceaea6c401203a76",
    "qg_outputs/LICENSE.lmqg": "4a86f350e558174e7696c298fed641e8a1c2fed082d53e1c96aedc37a84d03c0",
    "qg_outputs/nqg-du2017-test.txt": "03c21a6ad7f0d176782f9b57448e6dadcd114a6e95f52d7c74d86144eeab8ecf",
    "quora/duji2019/test.src": "5c44c45daa7079b5650622fbc5629c39d893ea5c9b269abe629f42378e2141d1",
    "quora/duji2019/test.tgt": "a48e00ce6bc3f0d77d138623999092f064d482487997987698f7e69a40ba7a09",
    "quora/duji2019/train.src": "56fb78eb99f36d964b04b14fbc233cb085a94521ef676ef7b54b9c833c394670",
    "quora/duji2019/train.tgt": "9303fa0ea65c7db705b3d74bce74c6077f83de61f16d3ef13c35f2000a55208d",
    "quora/duji2019/val.src": "c68b4aafbf3c5711e767c6fcb0df8590c322e0e158c8652e8d0b3bcb82eddfcb",
    "quora/duji2019/val.tgt": "f82937a6dd86a4470eb0cd8464ea8aeddf14b83d11e0ee72fa9f411ed75144e0",
    "squad/dev-v1.1.json": "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9",
    "xsum/LICENSE.EdinburghNLP-XSum": "5c439fbf0513380f36ff8dbb4d2d1924985670f9c2a4f6e5c7b06167023b84b1",
    "xsum/XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json": "9c0c5d8f048a90bd68b19a34e4c30577ed270d3247b2119fa06a04ef46292068",
    "xsum/gold-test-sentences.txt": "b8013ec3958cfb43b657bf428eafef4dc0d196cebec6f12ea02a15190d6cbac8",
    "xsum/outputs/convs2s-test-output.rouge": "c198175ee09197406d23e50c14332ecd8cccde9c74230e862d543278e711ad8c",
    "xsum/outputs/convs2s-test-output.txt": "c144bc99326ed601d9b7a345a24850f03f36669069788feb3974db18adf5477e",
    "xsum/outputs/ptgen-test-output.rouge": "6a7d9265e05a3972684bdb7ea10f7878922cc1ad95f4a435205641dce06d4c23",
    "xsum/outputs/ptgen-test-output.txt": "133df1db2e55a45c7934e0bd9aa5156e9c76d7c60acb9073a13b58a0aa4d184c",
}


#: the pinned size in bytes of each file of :data:`SUMS` (the size cap of its download)
SIZES: dict[str, int] = {
    "du2017/LICENSE.nqg": 1065,
    "du2017/doclist-dev.txt": 761,
    "du2017/doclist-test.txt": 809,
    "du2017/doclist-train.txt": 6004,
    "du2017/src-dev.txt": 2046431,
    "du2017/src-test.txt": 2190004,
    "du2017/tgt-dev.txt": 657712,
    "du2017/tgt-test.txt": 748180,
    "qg_outputs/LICENSE.lmqg": 1065,
    "qg_outputs/nqg-du2017-test.txt": 623654,
    "quora/duji2019/test.src": 1516068,
    "quora/duji2019/test.tgt": 1557461,
    "quora/duji2019/train.src": 5089938,
    "quora/duji2019/train.tgt": 5223968,
    "quora/duji2019/val.src": 142024,
    "quora/duji2019/val.tgt": 143783,
    "squad/dev-v1.1.json": 4854279,
    SQUAD_TRAIN: 30288272,
    "xsum/LICENSE.EdinburghNLP-XSum": 1071,
    "xsum/XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json": 2720574,
    "xsum/gold-test-sentences.txt": 1463746,
    "xsum/outputs/convs2s-test-output.rouge": 181,
    "xsum/outputs/convs2s-test-output.txt": 1205156,
    "xsum/outputs/ptgen-test-output.rouge": 176,
    "xsum/outputs/ptgen-test-output.txt": 1361387,
}


def catalogue() -> tuple[Source, ...]:
    """Every public source of the built-in tasks' raw files, in the order ``bench fetch --data`` gets them."""
    squad = "SQuAD-explorer/dataset"
    nqg = [_file("du2017", NQG, f"data/{n}", f"du2017/{n}", SUMS[f"du2017/{n}"])
           for n in ("doclist-train.txt", "doclist-dev.txt", "doclist-test.txt")]
    nqg += [_file("du2017", NQG, f"data/processed/{s}-{p}.txt", f"du2017/{s}-{p}.txt", SUMS[f"du2017/{s}-{p}.txt"])
            for p in ("dev", "test") for s in ("src", "tgt")]
    return (
        Source("squad", SQUAD_HOST, SQUAD_HOST, (f"{squad}/dev-v1.1.json",),
               (Output("squad/dev-v1.1.json", SUMS["squad/dev-v1.1.json"], size=SIZES["squad/dev-v1.1.json"]),),
               sha256=SUMS["squad/dev-v1.1.json"], size=SIZES["squad/dev-v1.1.json"]),
        Source("squad", SQUAD_HOST, SQUAD_HOST, (f"{squad}/train-v1.1.json",),
               (Output(SQUAD_TRAIN, SQUAD_TRAIN_SHA256, size=SIZES[SQUAD_TRAIN]),), sha256=SQUAD_TRAIN_SHA256,
               note="the official file; squad_qg's pinned split sha256 checks what is built from it",
               size=SIZES[SQUAD_TRAIN]),
        *nqg,
        _file("du2017", NQG, "LICENSE", "du2017/LICENSE.nqg", SUMS["du2017/LICENSE.nqg"]),
        _quora(),
        _file("xsum", XSUM, "XSum-Dataset/XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json",
              "xsum/XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json", SUMS["xsum/XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json"]),
        _xsum_predictions(),
        _file("xsum", XSUM, "LICENSE", "xsum/LICENSE.EdinburghNLP-XSum", SUMS["xsum/LICENSE.EdinburghNLP-XSum"]),
        _file("qg_outputs", LMQG, "misc/2022_emnlp_qg/nqg_baseline/nonlm.sample.test.hyp.txt",
              "qg_outputs/nqg-du2017-test.txt", SUMS["qg_outputs/nqg-du2017-test.txt"]),
        _file("qg_outputs", LMQG, "LICENSE", "qg_outputs/LICENSE.lmqg", SUMS["qg_outputs/LICENSE.lmqg"]),
    )
