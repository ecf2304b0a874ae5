"""Task data layer: task registry, split builders from raw sources, checksummed split cache.

Public API: ``TASKS``, ``Task``, ``load_split``, ``default_eval_split``, ``build``, ``verify``, ``data_dir``,
``DataError``, ``Example``, ``Split``. Builders import lazily, so importing this package is cheap.
"""

from bench.api.errors import DataError
from bench.api.tasks import SplitSpec, Task
from bench.api.types import Example, Split
from bench.data.api import build, default_eval_split, load_split, verify
from bench.data.sources import data_dir
from bench.data.tasks import TASKS, task_info

__all__ = [
    "TASKS",
    "DataError",
    "Example",
    "Split",
    "SplitSpec",
    "Task",
    "build",
    "default_eval_split",
    "data_dir",
    "load_split",
    "task_info",
    "verify",
]

import typing

if not typing.TYPE_CHECKING:  # at run time `bench.data.<module>` loads on first use (the docs' paths)
    from bench.api.lazy import submodules

    __getattr__ = submodules(__name__)
