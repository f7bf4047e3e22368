"""Function transforms over the lazy graph that live outside pycudamlx.core: vmap (vmap.py with
its batching rules in vmap_rules.py) and MLX's C++-binding tree rules (ctrees.py)."""

# pycudamlx.core imports vmap while it initialises: load it first, so that importing a module of
# this package directly (before pycudamlx.core) does not find it half-made.
from .. import core as _core  # noqa: E402,F401
