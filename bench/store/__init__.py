"""Every JSON under results/ is read and written here, typed and validated (run records, latency records,
calibration summaries, orderings, submissions, significance): no other module opens those files.

One module per kind, each with a ``validate_*`` (the fields its readers use; a :class:`StoreError` subclass
naming the file, the field and the fix), typed loaders and an atomic writer: :mod:`~bench.store.records`
(run records), :mod:`~bench.store.submissions` (external records), :mod:`~bench.store.latency`,
:mod:`~bench.store.calibration`, :mod:`~bench.store.orderings`, :mod:`~bench.store.pvalues`;
:mod:`~bench.store.paths` says where each kind lives under a results folder. The store sits below the
layers that make these files (latency, runs, workflows, report, cli) and imports none of them.
"""

from bench.store.files import StoreError

__all__ = ["StoreError"]

import typing

if not typing.TYPE_CHECKING:  # at run time `bench.store.<module>` loads on first use (the docs' paths)
    from bench.api.lazy import submodules

    __getattr__ = submodules(__name__)
