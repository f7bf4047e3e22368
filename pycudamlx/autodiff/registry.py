"""VJP rules, keyed by primitive class.

A rule is ``rule(prim, inputs, outputs, cotangents, wanted) -> list`` with one entry per input:
its cotangent (any shape that broadcasts to the input's, any dtype: the engine sums and casts it)
or None (no gradient). ``outputs``/``cotangents`` hold one entry per output of the node (None for
an output that died or received no cotangent); ``wanted[i]`` says whether input i leads to a
differentiated argument (rules skip work for the others). Rules build the backward graph with the
public lazy ops, so it is differentiable in turn.

Rules live in this package only: primitives never import them (the vmap rules of another
package work the same way), so each transform stays in its own files.
"""

from __future__ import annotations

from typing import Any, Callable

Rule = Callable[..., list]

_RULES: dict[type, Rule] = {}


def register(*classes: type) -> Callable[[Rule], Rule]:
    """Register a multi-output rule for ``classes``."""
    def deco(fn: Rule) -> Rule:
        for c in classes:
            _RULES[c] = fn
        return fn
    return deco


def register_single(*classes: type) -> Callable[[Callable[..., list]], Rule]:
    """Register ``fn(prim, inputs, out, ct, wanted)`` for single-output primitives."""
    def deco(fn: Callable[..., list]) -> Rule:
        def rule(prim: Any, inputs: tuple, outs: list, cts: list, wanted: list) -> list:
            return fn(prim, inputs, outs[0], cts[0], wanted)
        rule.__name__ = fn.__name__
        for c in classes:
            _RULES[c] = rule
        return fn
    return deco


_loaded = False


def lookup(prim: Any) -> Rule | None:
    """The rule for ``prim``'s class (or the nearest registered base class)."""
    global _loaded
    if not _loaded:
        _load()
    cls = type(prim)
    r = _RULES.get(cls)
    if r is None:
        for base in cls.__mro__[1:]:
            r = _RULES.get(base)
            if r is not None:
                _RULES[cls] = r
                break
    return r


def _load() -> None:
    global _loaded
    from . import rules_elementwise, rules_reduce, rules_shape, rules_misc  # noqa: F401
    _loaded = True
