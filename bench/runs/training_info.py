"""What a run record says its training ran with, as lines for `bench show`: the measured speed policy's choice,
why, and the probe's figures (#59), or for records before it the precision and compile that ran."""

from __future__ import annotations

from typing import Any


def training_lines(config: dict[str, Any]) -> list[str]:
    """What a record says its training ran with and why: the measured speed policy's choice, the reason and the
    probe's figures (records since #59), or for older records the precision and compile that ran."""
    train = config.get("train")
    if not isinstance(train, dict) or "precision" not in train:
        return []
    ran = f"{train.get('precision')}{' + compile' if train.get('compiled') else ' eager'}"
    policy = train.get("policy")
    if not isinstance(policy, dict) or not policy:
        asked = f"precision {config.get('precision')}, compile {config.get('compile')}"
        return [f"training: {ran} (asked: {asked}; before the measured speed policy, auto read the CPU flags)"]
    lines = [f"training: {ran}, {policy.get('source', '?')}: {policy.get('why', '?')}"]
    probe = policy.get("probe")
    if isinstance(probe, dict) and probe.get("summary"):
        when = f", probed {probe['created']}" if probe.get("created") else ""
        lines.append(f"speed probe ({probe.get('shape_class', '?')}{when}): {probe['summary']}")
    if policy.get("notice"):
        lines.append(f"notice: {policy['notice']}")
    return lines


__all__ = ["training_lines"]
