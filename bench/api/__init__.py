"""The contract a system or task author stands on, and the only part of ``bench`` that ``systems/`` and plugins
import (an import-contract test holds this; see docs/architecture.md). A system subclasses ``System``; a task
is a ``Task`` of ``SplitSpec``s whose builder returns ``Built``.

Cheap to import (no torch): the names below. The services a system may use live in submodules, imported where
used: ``bench.api.checkpoints`` (where backbone weights come from), ``bench.api.precision`` (bf16/fp16 where the
hardware is native), ``bench.api.speed_policy`` and ``bench.api.speed_cache`` (the measured training speed
policy: its decision rule and its cache), ``bench.api.atomic`` (writes that never leave half a file),
``bench.api.paths`` (the checkout, results and cache folders), ``bench.api.text`` (output post-processing shared
with the scorer).
"""

from bench.api.errors import DataError, EnvironmentProblem, LengthForcedUnsupported, UserError
from bench.api.registry import Registry, RegistryError, registering_from
from bench.api.system import BUDGETS, MAX_SEED, Family, System, SystemInfo, check_budget, check_system
from bench.api.tasks import Built, SplitSpec, Task, TaskFamily, read_lines, splits
from bench.api.types import Example, Split, TaskInfo

__all__ = [
    "BUDGETS",
    "Built",
    "DataError",
    "EnvironmentProblem",
    "Example",
    "Family",
    "LengthForcedUnsupported",
    "MAX_SEED",
    "Registry",
    "RegistryError",
    "Split",
    "SplitSpec",
    "System",
    "SystemInfo",
    "Task",
    "TaskFamily",
    "TaskInfo",
    "UserError",
    "check_budget",
    "check_system",
    "read_lines",
    "registering_from",
    "splits",
]

import typing

if not typing.TYPE_CHECKING:  # at run time `bench.api.<module>` loads on first use (the docs' paths)
    from bench.api.lazy import submodules

    __getattr__ = submodules(__name__)
