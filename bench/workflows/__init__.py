"""Jobs built from runs and records: calibration sweeps, floors, ordering tests, refiling, rescoring, submissions,
checkpoint fetching and the pre-flight validation."""

import typing

if not typing.TYPE_CHECKING:  # at run time `bench.workflows.<module>` loads on first use (the docs' paths)
    from bench.api.lazy import submodules

    __getattr__ = submodules(__name__)
