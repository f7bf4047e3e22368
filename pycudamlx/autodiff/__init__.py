"""Automatic differentiation of pycudamlx graphs (mx.grad, vjp, jvp, custom_function, ...).

engine.py traces and walks the graph backwards; registry.py maps primitive classes to VJP rules
(rules_*.py); custom.py holds the primitives that exist for differentiation only. The public
functions are in core/autodiff.py.
"""

# pycudamlx.core imports this package's modules while it initialises: load it first, so that
# importing a module of this package directly (before pycudamlx.core) does not find it half-made.
from .. import core as _core  # noqa: E402,F401
