"""Run a whole paper table at once: a plan of jobs, and launchers that run it.

``bench reproduce PAPER:TABLE --launcher local|slurm`` turns the table's runnable rows into a
:mod:`~bench.launch.plan` (one job per run spec, decode-only runs after the run that trains their
model) and hands it to a launcher: :mod:`~bench.launch.local` (a pool of child ``bench run``
processes on this machine) or :mod:`~bench.launch.slurm` (SLURM jobs through submitit). Every job
is the same ``bench run`` command a person would type (:mod:`~bench.launch.command`), logged to one
file per run id (:mod:`~bench.launch.joblog`) that ``bench status`` reads back
(:mod:`~bench.launch.status`). A relaunch skips complete runs and re-runs the rest, which resume
from their checkpoints and decode journals.
"""

import typing

if not typing.TYPE_CHECKING:  # at run time `bench.launch.<module>` loads on first use (the docs' paths)
    from bench.api.lazy import submodules

    __getattr__ = submodules(__name__)
