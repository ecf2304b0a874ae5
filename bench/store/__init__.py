"""Every JSON under results/ is read and written here, typed and validated (run records, submissions,
calibration summaries and points, latency and sweep records, orderings, significance): no other module opens
those files.

One path for every kind (:class:`~bench.store.sealed.SealedStore`): the file read inside its folder, every name
a path is built from checked against the one identifier rule (:mod:`bench.api.names`), the kind's validator
(schema, types, ranges; a :class:`StoreError` subclass naming the file, the field and the fix), and the seal (a
digest, or the content pinned as legacy: :mod:`bench.store.legacy`). The registry of kinds is
:mod:`bench.store.kinds`; one module per kind holds its validator, typed loaders and writer:
:mod:`~bench.store.records` (run records), :mod:`~bench.store.submissions` (external records),
:mod:`~bench.store.calibration`, :mod:`~bench.store.latency`, :mod:`~bench.store.sweeps`,
:mod:`~bench.store.orderings`, :mod:`~bench.store.pvalues`; :mod:`~bench.store.paths` says where each kind
lives under a results folder. The store sits below the layers that make these files (latency, runs,
workflows, report, cli) and imports none of them.
"""

from bench.store.files import StoreError

__all__ = ["StoreError"]

import typing

if not typing.TYPE_CHECKING:  # at run time `bench.store.<module>` loads on first use (the docs' paths)
    from bench.api.lazy import submodules

    __getattr__ = submodules(__name__)
