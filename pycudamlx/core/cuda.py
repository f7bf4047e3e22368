"""``mx.cuda``: the CUDA back-end's namespace (MLX's ``mlx.core.cuda``)."""

__all__ = ["is_available"]


def is_available() -> bool:
    """Check if the CUDA back-end is available (a driver and at least one CUDA device)."""
    from ..backend.cuda import driver

    return driver.is_available()


def __getattr__(name: str):
    # a missing name reads as in MLX (programs print it): module 'mlx.core.cuda', not our module path
    raise AttributeError(f"module 'mlx.core.cuda' has no attribute {name!r}")
