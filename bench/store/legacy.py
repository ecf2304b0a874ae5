"""Legacy is a pinned list, not a missing key (#57): the records committed before digests, by content.

A record the harness writes carries its digest (:func:`bench.store.integrity.digest`). Records committed
before digests carry none; they are accepted only when their digest (what the field would hold) is pinned in
``bench/store/legacy.json``, which ships with the code like the split hashes in ``bench/data/tasks.py``. So
deleting the ``digest`` key of a sealed record, or editing a legacy record, gives a record that is neither
sealed nor pinned, and every reader refuses it (naming the file and the fix).

The manifest maps each pinned record's path under the checkout (a note for people; matching is by content,
so a copy of results/ reads the same) to its digest. It only shrinks: a record the harness writes again
(``bench run --force``, ``rescore``, ``refile``) is sealed, and its entry is removed (``tests/test_store_kinds.py``
keeps the manifest and results/ in step). Nothing is ever added to it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

MANIFEST = Path(__file__).with_name("legacy.json")


@functools.cache
def pinned() -> dict[str, str]:
    """Path (``results/...``) -> digest of every pinned legacy record."""
    data = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return dict(data["records"])


@functools.cache
def pinned_digests() -> frozenset[str]:
    return frozenset(pinned().values())


def is_pinned(digest: str) -> bool:
    """Whether a record whose content has ``digest`` is one of the records committed before digests."""
    return digest in pinned_digests()


__all__ = ["MANIFEST", "is_pinned", "pinned", "pinned_digests"]
