"""Shared test fixtures: a toy regression task for the trainer, and toy QG examples for the NAR family."""

from __future__ import annotations

import random

import torch

from bench.api.types import Example

WORDS = "the river city team music war king school law film church army island".split()


def toy_data(n: int = 64) -> list[tuple[list[float], float]]:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, 4, generator=g)
    y = x @ torch.tensor([1.0, -2.0, 0.5, 3.0])
    return [(x[i].tolist(), float(y[i])) for i in range(n)]


def toy_collate(items, rng):
    x = torch.tensor([i[0] for i in items]) + torch.tensor([[rng.gauss(0, 0.01)] for _ in items])
    return {"x": x, "y": torch.tensor([i[1] for i in items])}


def toy_loss(model, batch):
    """Squared error in fp32 (``.float()`` is a no-op for fp32 models and keeps a bf16 run's loss in fp32)."""
    return ((model(batch["x"]).squeeze(-1).float() - batch["y"]) ** 2).mean()


def qg_examples(n: int, seed: int) -> list[Example]:
    """``n`` seeded toy QG examples: answer [SEP] paragraph -> "what is the <answer> ?"."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ans = rng.choice(WORDS)
        para = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))
        out.append(Example(f"e{i}", f"{ans} [SEP] {para}", f"what is the {ans} ?"))
    return out
