"""``import pycudamlx.optimizers as optim``: MLX's ``mlx.optimizers`` (optimizers, schedules,
clip_grad_norm)."""

from .optimizers import *  # noqa: F401,F403
from .schedulers import *  # noqa: F401,F403


def __getattr__(name: str):
    # a missing name reads as in MLX (programs print it): module 'mlx.optimizers', not our module path
    raise AttributeError(f"module 'mlx.optimizers' has no attribute {name!r}")
