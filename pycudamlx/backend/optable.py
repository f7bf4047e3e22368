"""The elementwise op table, shared by both backends: one row per op.

A row names the op, its arity, its numpy implementation (the CPU backend and the test oracle) and
its CUDA C++ expression per dtype family, over the compute-type operands ``a`` (and ``b``). The
CUDA backend turns the expression into the ``Op`` functor of a kernel module; a fused kernel can be
composed from the same expressions. Adding an op is adding a row.

Dtype families: ``b`` bool, ``i`` signed integer, ``u`` unsigned integer, ``f`` real floating
(float16 and bfloat16 compute in float), ``c`` complex64. ``*`` matches any family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class ElementwiseOp:
    name: str
    arity: int
    numpy: Callable[..., np.ndarray]
    cuda: dict[str, str]
    #: "same": the output has the (promoted) input dtype; "bool": comparisons and predicates.
    result: str = "same"
    #: Dtype families the op is defined for (MLX raises for the others).
    families: str = "biufc"
    extra: dict[str, str] = field(default_factory=dict)

    def expression(self, family: str) -> str:
        """The C++ expression for one dtype family; KeyError when the op has none."""
        expr = self.cuda.get(family)
        if expr is None:
            expr = self.cuda["*"]
        return expr


OPS: dict[str, ElementwiseOp] = {}


def _op(name: str, arity: int, numpy_fn: Callable[..., np.ndarray], cuda: dict[str, str] | str,
        **kw: object) -> None:
    if isinstance(cuda, str):
        cuda = {"*": cuda}
    OPS[name] = ElementwiseOp(name, arity, numpy_fn, cuda, **kw)  # type: ignore[arg-type]


# The foundation's rows. The array core adds the full MLX set here.
_op("add", 2, np.add, {"*": "a + b", "b": "a || b"})
_op("subtract", 2, np.subtract, "a - b", families="iufc")
_op("multiply", 2, np.multiply, {"*": "a * b", "b": "a && b"})
_op("maximum", 2, np.maximum, "(a > b || a != a) ? a : b", families="biuf")
_op("minimum", 2, np.minimum, "(a < b || a != a) ? a : b", families="biuf")
_op("negative", 1, np.negative, "-a", families="iufc")
_op("square", 1, np.square, "a * a", families="iufc")
