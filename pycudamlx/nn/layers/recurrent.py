"""RNN, GRU, LSTM over [..., L, D] inputs (one time step per loop iteration, as MLX; MLX's
parameter names Wxh/Whh/bias, Wx/Wh/b/bhn, Wx/Wh/bias)."""

from __future__ import annotations

import math
from typing import Callable, Optional

from ... import core as mx
from .activations import tanh
from .base import Module

__all__ = ["GRU", "LSTM", "RNN"]


def _uniform(scale: float, *shape: int) -> mx.array:
    return mx.random.uniform(low=-scale, high=scale, shape=shape)


def _input_projection(x: mx.array, weight: mx.array, bias: Optional[mx.array]) -> mx.array:
    return mx.addmm(bias, x, weight.T) if bias is not None else x @ weight.T


class RNN(Module):
    """h_t = nonlinearity(W_xh x_t + b + W_hh h_{t-1}) (tanh by default)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: Optional[Callable] = None) -> None:
        super().__init__()
        self.nonlinearity = nonlinearity or tanh
        if not callable(self.nonlinearity):
            raise ValueError(f"Nonlinearity must be callable. Current value: {nonlinearity}.")
        scale = 1.0 / math.sqrt(hidden_size)
        self.hidden_size = hidden_size
        self.Wxh = _uniform(scale, hidden_size, input_size)
        self.Whh = _uniform(scale, hidden_size, hidden_size)
        self.bias = _uniform(scale, hidden_size) if bias else None

    def _extra_repr(self) -> str:
        return (f"input_dims={self.Wxh.shape[1]}, hidden_size={self.hidden_size}, "
                f"nonlinearity={self.nonlinearity}, bias={self.bias is not None}")

    def __call__(self, x: mx.array, hidden: Optional[mx.array] = None) -> mx.array:
        x = _input_projection(x, self.Wxh, self.bias)
        states = []
        for t in range(x.shape[-2]):
            step_in = x[..., t, :]
            hidden = step_in if hidden is None else mx.addmm(step_in, hidden, self.Whh.T)
            hidden = self.nonlinearity(hidden)
            states.append(hidden)
        return mx.stack(states, axis=-2)


class GRU(Module):
    """Gated recurrent unit (PyTorch's formulation: the reset gate scales W_hn h + b_hn)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(scale, 3 * hidden_size, input_size)
        self.Wh = _uniform(scale, 3 * hidden_size, hidden_size)
        self.b = _uniform(scale, 3 * hidden_size) if bias else None
        self.bhn = _uniform(scale, hidden_size) if bias else None

    def _extra_repr(self) -> str:
        return (f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, "
                f"bias={self.b is not None}")

    def __call__(self, x: mx.array, hidden: Optional[mx.array] = None) -> mx.array:
        hs = self.hidden_size
        x = _input_projection(x, self.Wx, self.b)
        x_rz, x_n = x[..., :-hs], x[..., -hs:]
        states = []
        for t in range(x.shape[-2]):
            rz = x_rz[..., t, :]
            if hidden is not None:
                h_proj = hidden @ self.Wh.T
                h_n = h_proj[..., -hs:]
                if self.bhn is not None:
                    h_n = h_n + self.bhn
                rz = rz + h_proj[..., :-hs]
            r, z = mx.split(mx.sigmoid(rz), 2, axis=-1)
            n = x_n[..., t, :]
            if hidden is not None:
                n = n + r * h_n
            elif self.bhn is not None:
                n = n + r * self.bhn
            n = mx.tanh(n)
            hidden = (1 - z) * n + z * hidden if hidden is not None else (1 - z) * n
            states.append(hidden)
        return mx.stack(states, axis=-2)


class LSTM(Module):
    """Long short-term memory; returns (hidden states, cell states), each [..., L, H]."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(scale, 4 * hidden_size, input_size)
        self.Wh = _uniform(scale, 4 * hidden_size, hidden_size)
        self.bias = _uniform(scale, 4 * hidden_size) if bias else None

    def _extra_repr(self) -> str:
        return (f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, "
                f"bias={self.bias is not None}")

    def __call__(self, x: mx.array, hidden: Optional[mx.array] = None,
                 cell: Optional[mx.array] = None) -> tuple[mx.array, mx.array]:
        x = _input_projection(x, self.Wx, self.bias)
        hiddens, cells = [], []
        for t in range(x.shape[-2]):
            gates = x[..., t, :]
            if hidden is not None:
                gates = mx.addmm(gates, hidden, self.Wh.T)
            i, f, g, o = mx.split(gates, 4, axis=-1)
            i, f, g, o = mx.sigmoid(i), mx.sigmoid(f), mx.tanh(g), mx.sigmoid(o)
            cell = f * cell + i * g if cell is not None else i * g
            hidden = o * mx.tanh(cell)
            cells.append(cell)
            hiddens.append(hidden)
        return mx.stack(hiddens, axis=-2), mx.stack(cells, axis=-2)
