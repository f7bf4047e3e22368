"""The node protocol shared by the array class (core/array.py) and the graph layer.

An array is a graph node: unevaluated it holds ``_prim``, ``_inputs``, ``_stream`` (and
``_siblings`` for multi-output nodes); evaluated it holds ``_data``. Each node remembers weakly
the pending nodes built on it (``_cons``: ``[prune limit, weakref, ...]``) so that an in-place
update can re-point them to the old value (core/array.py ``_overwrite``). Whoever gives a node
new inputs (the op functions, graph/fusion.py) registers it here.
"""

from __future__ import annotations

import weakref
from typing import Any

_ref = weakref.ref


def prune(cons: list) -> None:
    """Drop dead and evaluated consumers from a consumer list ([limit, ref, ref, ...])."""
    n = len(cons)  # entries appended meanwhile (another thread) stay
    keep = [r for r in cons[1:n] if (t := r()) is not None and t._prim is not None]
    cons[1:n] = keep
    cons[0] = max(8, 2 * len(cons))


def register(node: Any, inputs: tuple) -> None:
    """Record ``node`` as a consumer of each input (weakly)."""
    if inputs:
        ref = _ref(node)
        for i in inputs:
            c = i._cons
            if c is None:
                i._cons = [8, ref]
            else:
                c.append(ref)
                if len(c) > c[0]:
                    prune(c)
