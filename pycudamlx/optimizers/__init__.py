"""``import pycudamlx.optimizers as optim``: MLX's ``mlx.optimizers`` (optimizers, schedules,
clip_grad_norm)."""

from .optimizers import *  # noqa: F401,F403
from .schedulers import *  # noqa: F401,F403
