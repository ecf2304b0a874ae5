"""The contract every system adapter implements, and the budgets that size its runs.

``bench`` reaches systems only through :data:`systems.SYSTEMS`; an entry is a factory
``factory(budget: str, overrides: Mapping[str, Any]) -> System``. Named variants (``mist_unilm``,
``encoder_bert``...) are presets over one class, like fairseq's ``register_model_architecture``.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from bench.api.errors import LengthForcedUnsupported
from bench.api.types import Example, TaskInfo

BUDGETS: tuple[str, ...] = ("smoke", "cpu", "paper")
#: the largest seed a run takes (numpy seeds its generator with [0, 2**32 - 1]): ``bench run --seed`` and every
#: family's ``seed`` field are held to [0, MAX_SEED]
MAX_SEED = 2**32 - 1
Family = Literal["AR", "NAR", "semi-NAR", "reference"]


@dataclass(frozen=True)
class SystemInfo:
    """What a system is, stored in every run record next to its numbers."""

    name: str
    family: Family
    iterations: int | str  # decoder passes per output (1 for NAR, "adaptive", "n" for AR)
    citation: str
    backbone: str = "none"
    budget: str = "smoke"
    config: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class System(abc.ABC):
    """A text generator the harness can train, decode with, and time; every adapter subclasses it.

    ``fit`` must be resumable from ``workdir`` (a killed run continues from its last checkpoint).
    ``decode`` is batched for quality runs; ``decode_one`` is batch size 1 for the latency meter,
    which owns the clock: adapters never time themselves. Both must produce the same text for the
    same example.

    The class attributes below are the whole contract the harness reads besides those four
    methods; each has the default that is right for a plain trained system, so an adapter states
    only what differs (a plugin author reads this class, not the harness). ``bench`` never probes
    a system with ``getattr``.
    """

    #: False when ``fit`` has nothing to learn (reference baselines, decoding another run's
    #: checkpoint): the harness then skips loading the training split. May be a property.
    needs_training: bool = True
    #: settings that change decoding but not the trained model: a run that differs from another
    #: only in these reuses that run's checkpoint (``bench run --set decode=mist_iter``)
    decode_only_overrides: tuple[str, ...] = ()
    #: True when the dev split decides the trained weights (early stopping, best dev-loss checkpoint); False
    #: (dev only draws the training curve) lets tasks with one training split share one model, e.g.
    #: ``squad_qg_reversed`` decodes the ``squad_qg`` model (its dev is squad_qg's test: selecting on it leaks)
    selects_on_dev: bool = True
    #: registered names that may train exactly this system's model: the first of them listed before this
    #: system that resolves to the same training settings (same budget, overrides and seed) owns the one
    #: workdir both decode (CopyBERT's SpanBERT row at the cpu budget trains the self-copy row's model);
    #: () for a family whose behaviour depends on its name beyond the settings it reports
    model_siblings: tuple[str, ...] = ()
    #: the registered system that runs in this one's place at the ``cpu`` budget when :meth:`missing_weights`
    #: names a checkpoint with no offline copy (the MIST tables' cpu rows: ``mist_unilm`` -> ``mist_minilm_l6``);
    #: None: no stand-in. ``bench run`` names it (``--stand-in`` runs it, recorded under its own name)
    cpu_stand_in: str | None = None
    #: Python modules beyond the core install that ``fit`` or ``decode`` import (the fairseq baselines:
    #: ``("fairseq",)``), and the command that installs them (``make fairseq``): `bench ls systems` lists a
    #: system whose modules are missing with that command, and `bench run` refuses it in one line before any work
    requires_modules: tuple[str, ...] = ()
    install_command: str = ""
    #: ``decode_one(example, forced_length=N)`` emits exactly N target tokens (length-forced timing)
    supports_forced_length: bool = False
    #: ``--set weights=random`` builds the paper-size architecture untrained, for speed columns only
    #: (``fit`` then costs 0 updates and no download). Systems without it refuse that setting.
    supports_random_weights: bool = False
    #: the meter's own overhead probe: exempt from the minimum timed duration
    latency_probe: bool = False
    #: :meth:`decode_batch` runs the batch as one padded forward pass (False: the default per-item loop), so a
    #: batched throughput figure says whether it timed real batching (recorded by the sweep)
    batched_decode: bool = False
    #: decoder passes of the latest ``decode``/``decode_one`` call (None: the system does not count)
    last_iterations: int | None = None
    #: the torch device the harness placed this system on (:meth:`place`). Placement is the harness's:
    #: a family trains on it, builds every decode input on it, and never picks a device itself (no
    #: ``torch.cuda.is_available()``, no accelerate default), so ``--device cpu`` on a GPU machine holds
    device: str = "cpu"

    @abc.abstractmethod
    def describe(self) -> SystemInfo:
        """What this system is, stored in every record (family, passes, backbone, config)."""

    @abc.abstractmethod
    def fit(self, task: TaskInfo, workdir: Path) -> None:
        """Train (resumably) or load; a no-op for systems that learn nothing."""

    @abc.abstractmethod
    def decode(self, examples: Sequence[Example]) -> list[str]:
        """One output line per example, batched as the system likes."""

    @abc.abstractmethod
    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        """Batch size 1 for the latency meter; ``forced_length`` only where ``supports_forced_length``."""

    def decode_batch(self, examples: Sequence[Example], forced_lengths: Sequence[int] | None = None) -> list[str]:
        """``examples`` decoded as one batch for the throughput sweep, each output exactly what
        :meth:`decode_one` gives for it (``forced_lengths[i]``: item i's own forced length). The default
        loops over :meth:`decode_one`, so every system can be swept; a family that pads a batch overrides
        it and sets :attr:`batched_decode`."""
        if forced_lengths is None:
            return [self.decode_one(ex) for ex in examples]
        if len(forced_lengths) != len(examples):
            raise ValueError(f"{len(forced_lengths)} forced lengths for {len(examples)} examples; pass one per item.")
        return [self.decode_one(ex, forced_length=n) for ex, n in zip(examples, forced_lengths, strict=True)]

    def models(self) -> Sequence[Any]:
        """The torch modules this system trains and decodes with, for :meth:`place` to move; () for
        systems without one (reference baselines). Each family that holds a model returns it here."""
        return ()

    def weights_footprint(self) -> Mapping[str, Any] | None:
        """``parameters`` and ``parameter_bytes`` of weights :meth:`models` cannot show (a decoder outside
        torch, e.g. CTranslate2's), with a ``parameter_bytes_note`` on how the bytes were counted; None (the
        default): the harness counts the parameters of :meth:`models`."""
        return None

    def place(self, device: str) -> None:
        """Put this system on ``device``. The harness calls it after building (``fit`` then trains
        there), after ``fit`` or a load (the model ``fit`` built joins it) and before timing. Override
        only to move state that :meth:`models` does not return, and call this one too."""
        self.device = str(device)
        for module in self.models():
            module.to(self.device)

    def missing_modules(self) -> list[str]:
        """The modules of :attr:`requires_modules` this Python cannot find (looked up, not imported: cheap)."""
        return [name for name in self.requires_modules if not module_here(name)]

    def missing_weights(self) -> str | None:
        """The checkpoint ``fit`` would load that has no copy on this machine (checked without a download), or
        None: all it needs is here, or it loads nothing, or the family does not say (the load itself then
        reports a missing file)."""
        return None

    def training_settings(self, task: TaskInfo) -> Mapping[str, Any]:
        """The resolved settings that decide the model this system trains on ``task``: the training key
        hashes them (minus decode-only and runtime fields) to name the workdir; ``task`` comes without its
        splits (``train``/``dev`` are empty). Default: the config of
        :meth:`describe`. A family whose budget sizes a run per task (and so leaves those fields unset
        until ``fit``) resolves them here, so that a calibration point which sets them explicitly and the
        preset run that later adopts the same values share one trained model."""
        return self.describe().config

    def refuse_forced_length(self, forced_length: int | None) -> None:
        """For systems without a length-forced mode: a forced length is an error, not silently ignored."""
        if forced_length is not None:
            raise LengthForcedUnsupported(
                f"{self.describe().name} cannot decode to a forced length (supports_forced_length is False)"
            )


def module_here(name: str) -> bool:
    """Whether ``import name`` can find the module (its spec is looked up; nothing is imported)."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package missing, or a finder that refuses it
        return False


def require_modules(name: str, system: System) -> None:
    """Refuse, in one line naming the install command, a system whose :attr:`System.requires_modules` are not here
    (before any work: the import would otherwise fail deep inside ``fit`` with a long traceback)."""
    from bench.api.errors import EnvironmentProblem

    missing = system.missing_modules()
    if missing:
        what = " and ".join(missing)
        how = f"`{system.install_command}` installs it" if system.install_command else f"install {what}"
        raise EnvironmentProblem(f"{name} needs {what}, not installed in this Python: {how} (`bench ls systems` "
                                 "lists what each system needs).")


def check_system(name: str, system: object) -> System:
    """The registry's factories must return a :class:`System`; a plugin that does not is told how to fix it."""
    if not isinstance(system, System):
        from bench.api.registry import RegistryError

        raise RegistryError(
            f"system '{name}': its factory returned {type(system).__module__}.{type(system).__qualname__}, "
            "which does not subclass bench.api.system.System; subclass it and implement describe, fit, decode "
            "and decode_one."
        )
    return system


def check_budget(budget: str) -> str:
    if budget not in BUDGETS:
        raise ValueError(f"Unknown budget '{budget}'. Choose one of: {', '.join(BUDGETS)}.")
    return budget
