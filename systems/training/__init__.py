"""Training utilities shared by the systems: trainer (accelerate), optimisers, schedules, losses, checkpoints."""

from systems.training.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from systems.training.losses import fairseq_smoothed_loss, nll_loss, paddle_smoothed_loss, unilm_smoothed_loss
from systems.training.optim import BertAdam, Schedule, build_optimizer, build_scheduler, param_groups
from systems.training.trainer import (
    DEV_CURVE_EXAMPLES,
    TrainConfig,
    Trainer,
    TrainResult,
    example_indices,
    train_config,
)

__all__ = [
    "DEV_CURVE_EXAMPLES",
    "BertAdam",
    "Schedule",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "build_optimizer",
    "build_scheduler",
    "example_indices",
    "fairseq_smoothed_loss",
    "latest_checkpoint",
    "load_checkpoint",
    "nll_loss",
    "paddle_smoothed_loss",
    "param_groups",
    "save_checkpoint",
    "train_config",
    "unilm_smoothed_loss",
]
