"""Systems, tasks and recipes from outside the package, without forking it.

Two routes, as in the tools researchers already use (lm-evaluation-harness ``--include_path``,
fairseq ``--user-dir``, HELM's entry points):

* **Installed plugins** declare entry points in their ``pyproject.toml``::

      [project.entry-points."bench.systems"]
      lead_words = "bench_example_plugin.system:make"      # make(budget, overrides) -> System
      [project.entry-points."bench.tasks"]
      toy_pairs = "bench_example_plugin.task:TASK"         # a bench.data.tasks.Task
      [project.entry-points."bench.recipes"]
      exact_match = "bench_example_plugin.recipe:EXACT_MATCH"  # a bench.scoring.recipe.Recipe

  The registries read these groups the first time they are asked for a name (nothing is
  imported until an entry is used), so ``bench`` and the Python API see them alike.

* **``bench --include PATH``** (or ``$BENCH_INCLUDE``, paths joined by ``os.pathsep``) imports a
  ``.py`` file, a package folder, or every ``.py`` file of a plain folder before any command
  runs; the imported code registers its entries with ``SYSTEMS.register(...)`` etc. The file's
  folder is put on ``sys.path`` first, so it may import modules beside it.

Either way an entry goes through the same checks (a system factory must return a
``bench.api.system.System``; a task must be a ``Task``; a recipe a ``Recipe``), and its runs are
recorded and tabulated like a built-in's; ``bench ls systems`` and every run record name where the
entry came from (for ``--include``, the path and a hash of the code imported).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import stat
import sys
from pathlib import Path

from bench.api.errors import UserError
from bench.api.registry import registering_from

ENV_VAR = "BENCH_INCLUDE"
#: every path this process included (flag or environment), resolved: child `bench run`s get them too
_INCLUDED: list[Path] = []


class PluginError(UserError):
    """An ``--include`` path that does not exist or does not import."""


def include_paths_from_env() -> list[Path]:
    raw = os.environ.get(ENV_VAR, "")
    return [Path(p) for p in raw.split(os.pathsep) if p.strip()]


def included() -> list[Path]:
    """The paths this process has included, in order: what a launcher passes on as ``$BENCH_INCLUDE``
    so that its child ``bench run`` processes know the same systems, tasks and recipes."""
    return list(_INCLUDED)


def include(path: Path | str) -> str:
    """Import ``path`` (a ``.py`` file, a package folder, or a folder of ``.py`` files) so that it
    registers its systems, tasks and recipes; returns the origin stamped on what it registered."""
    path = Path(path).expanduser().resolve()
    if not path.exists():
        raise PluginError(f"--include {path}: no such file or folder. Fix: pass a .py file or a folder of them.")
    if not (path.is_file() or path.is_dir()):  # a FIFO or a device: opening it could block for ever
        raise PluginError(f"--include {path}: not a regular file or folder. Fix: pass a .py file or a folder.")
    if path.is_file() and path.suffix != ".py":
        raise PluginError(f"--include {path}: not a .py file. Fix: pass a Python module or a folder.")
    # the hash covers the included file's whole folder: the modules it imports beside it are the plugin too
    files = python_files(path.parent if path.is_file() else path, recursive=True)
    if not files:
        raise PluginError(f"--include {path}: the folder holds no .py file.")
    origin = f"--include {path} (code sha256 {_code_hash(files)[:12]})"
    _import_registries()  # the built-in entries register as built-in, whatever the plugin imports first
    with registering_from(origin):
        if path.is_file():
            _import_file(path)
        elif (path / "__init__.py").is_file():
            _import_package(path)
        else:
            for file in python_files(path):
                _import_file(file)
    if path not in _INCLUDED:
        _INCLUDED.append(path)
    return origin


def _import_registries() -> None:
    import bench.data.tasks
    import bench.scoring  # noqa: F401
    import systems  # noqa: F401


def python_files(folder: Path, recursive: bool = False) -> list[Path]:
    """The regular ``*.py`` files in ``folder`` (below it too when ``recursive``), sorted: a FIFO (whose read
    would block), a dangling link or a folder named ``x.py`` is not code, and is neither hashed nor imported."""
    found = folder.rglob("*.py") if recursive else folder.glob("*.py")
    return sorted(f for f in found if _is_regular(f))


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)  # follows a link: a link to a module is that module
    except OSError:  # a dangling link, a loop, a name too long
        return False


def _code_hash(files: list[Path]) -> str:
    """One hash over the included code: a record says which version of a plugin made it."""
    h = hashlib.sha256()
    for file in files:
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise PluginError(f"--include {file}: cannot read it ({exc.strerror or exc}). Fix: make it readable, "
                              "or move it out of the included folder.") from None
        h.update(file.name.encode() + b"\0" + data)
    return h.hexdigest()


def _exited(where: Path | str, exc: SystemExit) -> PluginError:
    """A plugin that calls ``sys.exit`` (or ``exit()``, or argparse on import) would end ``bench`` silently."""
    return PluginError(f"--include {where}: it called sys.exit({exc.code!r}) while being imported; a plugin must "
                       "only register systems, tasks or recipes. Fix: remove the exit (guard script code with "
                       "`if __name__ == '__main__':`).")


def _import_file(file: Path) -> None:
    folder = str(file.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = f"bench_include_{hashlib.sha256(str(file).encode()).hexdigest()[:8]}_{file.stem}"
    if name in sys.modules:
        return  # the same file included twice: its registrations already ran
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise PluginError(f"--include {file}: Python cannot load it as a module.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except UserError:
        raise
    except SystemExit as exc:
        del sys.modules[name]
        raise _exited(file, exc) from None
    except Exception as exc:
        del sys.modules[name]
        raise PluginError(
            f"--include {file}: importing it failed with {type(exc).__name__}: {exc}. "
            f"Fix: run `python {file}` to see the traceback."
        ) from exc


def _import_package(folder: Path) -> None:
    parent = str(folder.parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    try:
        importlib.import_module(folder.name)
    except UserError:
        raise
    except SystemExit as exc:
        raise _exited(folder, exc) from None
    except Exception as exc:
        raise PluginError(
            f"--include {folder}: importing package '{folder.name}' failed with {type(exc).__name__}: {exc}. "
            f"Fix: run `python -c 'import {folder.name}'` from {parent} to see the traceback."
        ) from exc
