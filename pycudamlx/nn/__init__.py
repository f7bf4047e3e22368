"""``import pycudamlx.nn as nn``: MLX's ``mlx.nn`` (modules, layers, activations, losses,
initializers, value_and_grad) built on pycudamlx.core ops."""

from . import init, losses  # noqa: F401
from .layers import *  # noqa: F401,F403
from .layers import Module  # noqa: F401
from .utils import average_gradients, value_and_grad  # noqa: F401


def __getattr__(name: str):
    # a missing name reads as in MLX (programs print it): module 'mlx.nn', not our module path
    raise AttributeError(f"module 'mlx.nn' has no attribute {name!r}")
