"""Learning-rate schedules: functions of the optimizer's step counter (an array)."""

from __future__ import annotations

import math
from typing import Callable, List

from .. import core as mx

__all__ = ["cosine_decay", "exponential_decay", "join_schedules", "linear_schedule",
           "step_decay"]


def exponential_decay(init: float, decay_rate: float) -> Callable:
    """init * decay_rate ** step."""
    def schedule(step: mx.array) -> mx.array:
        return init * decay_rate**step
    return schedule


def step_decay(init: float, decay_rate: float, step_size: int) -> Callable:
    """init * decay_rate ** (step // step_size)."""
    if step_size < 1:
        raise ValueError(f"step_size must be greater than 0, but got {step_size}.")

    def schedule(step: mx.array) -> mx.array:
        return init * decay_rate ** (step // step_size)
    return schedule


def cosine_decay(init: float, decay_steps: int, end: float = 0.0) -> Callable:
    """Half a cosine from ``init`` to ``end`` over ``decay_steps``, then ``end``."""
    if decay_steps < 1:
        raise ValueError(f"decay_steps must be greater than 0, but got {decay_steps}.")

    def schedule(step: mx.array) -> mx.array:
        s = mx.minimum(step, decay_steps)
        decay = 0.5 * (1.0 + mx.cos(math.pi / decay_steps * s))
        return end + decay * (init - end)
    return schedule


def join_schedules(schedules: List[Callable], boundaries: List[int]) -> Callable:
    """``schedules[i]`` from ``boundaries[i-1]`` on, each seeing steps counted from its
    boundary."""
    if len(schedules) == 0:
        raise ValueError("Must provide at least 1 schedule to join.")
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"Received {len(boundaries)} boundaries but expected "
                         f"{len(schedules) - 1}.")

    def schedule(step: mx.array) -> mx.array:
        out = schedules[0](step)
        for boundary, later in zip(boundaries, schedules[1:]):
            out = mx.where(step < boundary, out, later(step - boundary))
        return out
    return schedule


def linear_schedule(init: float, end: float, steps: int) -> Callable:
    """Linear from ``init`` to ``end`` over ``steps``, then ``end``."""
    if steps < 1:
        raise ValueError(f"steps must be greater than 0, but got {steps}.")

    def schedule(step: mx.array) -> mx.array:
        step = mx.minimum(step, steps)
        return step * ((end - init) / steps) + init
    return schedule
