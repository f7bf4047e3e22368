"""``nn.losses``: MLX's loss functions (same formulas, argument names, defaults, checks).

Every loss takes ``reduction`` in ('none', 'mean', 'sum'); the default differs per loss, as in
MLX (e.g. cross_entropy 'none', mse_loss 'mean').
"""

from __future__ import annotations

import math
from typing import Literal, Optional, get_args

from .. import core as mx

__all__ = ["binary_cross_entropy", "cosine_similarity_loss", "cross_entropy",
           "gaussian_nll_loss", "hinge_loss", "huber_loss", "kl_div_loss", "l1_loss",
           "log_cosh_loss", "margin_ranking_loss", "mse_loss", "nll_loss", "smooth_l1_loss",
           "triplet_loss"]

Reduction = Literal["none", "mean", "sum"]
_REDUCTIONS = get_args(Reduction)


def _reduce(loss: mx.array, reduction: Reduction = "none") -> mx.array:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"Invalid reduction. Must be one of {_REDUCTIONS}.")
    if reduction == "mean":
        return mx.mean(loss)
    if reduction == "sum":
        return mx.sum(loss)
    return loss


def _same_shape(a: mx.array, b: mx.array, a_name: str, b_name: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{a_name.capitalize()} shape {a.shape} does not match {b_name} shape "
                         f"{b.shape}.")


def _weighted(loss: mx.array, weights: Optional[mx.array]) -> mx.array:
    if weights is None:
        return loss
    if weights.shape != loss.shape:
        raise ValueError(f"Weights with shape {weights.shape} is not the same as output loss "
                         f"with shape {loss.shape}.")
    return loss * weights


def cross_entropy(logits: mx.array, targets: mx.array, weights: Optional[mx.array] = None,
                  axis: int = -1, label_smoothing: float = 0.0,
                  reduction: Reduction = "none") -> mx.array:
    """Cross entropy of ``logits`` against class indices (one dim fewer than ``logits``) or
    probabilities (same shape), with optional per-element ``weights`` and label smoothing."""
    if label_smoothing < 0 or label_smoothing >= 1:
        raise ValueError(f"Label smoothing must be in [0, 1), got {label_smoothing}.")
    as_probs = targets.ndim == logits.ndim
    expected = list(logits.shape)
    if not as_probs:
        expected.pop(axis)
    if tuple(targets.shape) != tuple(expected):
        raise ValueError(f"Targets shape {targets.shape} does not match logits shape "
                         f"{logits.shape}.")
    logits = logits - mx.stop_gradient(mx.max(logits, axis=axis, keepdims=True))
    if as_probs:
        score = mx.sum(logits * targets, axis=axis)
    else:
        score = mx.take_along_axis(logits, mx.expand_dims(targets, axis), axis).squeeze(axis)
    lse = mx.logsumexp(logits, axis=axis)
    if label_smoothing > 0:
        loss = (lse - (1 - label_smoothing) * score
                + (-logits.mean(axis=axis) * label_smoothing))
    else:
        loss = lse - score
    return _reduce(_weighted(loss, weights), reduction)


def binary_cross_entropy(inputs: mx.array, targets: mx.array,
                         weights: Optional[mx.array] = None, with_logits: bool = True,
                         reduction: Reduction = "mean") -> mx.array:
    """Binary cross entropy of logits (or probabilities, ``with_logits=False``; logs clipped
    at -100 as in PyTorch and MLX)."""
    _same_shape(inputs, targets, "inputs", "targets")
    if with_logits:
        loss = mx.logaddexp(0.0, inputs) - inputs * targets
    else:
        log_p = mx.clip(mx.log(inputs), a_min=-100, a_max=None)
        log_q = mx.clip(mx.log(1 - inputs), a_min=-100, a_max=None)
        loss = -(targets * log_p + (1 - targets) * log_q)
    return _reduce(_weighted(loss, weights), reduction)


def l1_loss(predictions: mx.array, targets: mx.array,
            reduction: Reduction = "mean") -> mx.array:
    """|predictions - targets|."""
    _same_shape(predictions, targets, "predictions", "targets")
    return _reduce(mx.abs(predictions - targets), reduction)


def mse_loss(predictions: mx.array, targets: mx.array,
             reduction: Reduction = "mean") -> mx.array:
    """(predictions - targets)^2."""
    _same_shape(predictions, targets, "predictions", "targets")
    return _reduce(mx.square(predictions - targets), reduction)


def nll_loss(inputs: mx.array, targets: mx.array, axis: int = -1,
             reduction: Reduction = "none") -> mx.array:
    """Negative log likelihood: minus the log-probability of each target class."""
    loss = -mx.take_along_axis(inputs, mx.expand_dims(targets, axis), axis).squeeze(axis)
    return _reduce(loss, reduction)


def gaussian_nll_loss(inputs: mx.array, targets: mx.array, vars: mx.array, full: bool = False,
                      eps: float = 1e-06, reduction: Reduction = "mean") -> mx.array:
    """Gaussian negative log likelihood with predicted variances ``vars`` (clamped at eps)."""
    _same_shape(inputs, targets, "inputs", "targets")
    _same_shape(inputs, vars, "inputs", "vars")
    vars = mx.maximum(vars, eps)
    loss = 0.5 * (mx.log(vars) + mx.square(targets - inputs) / vars)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def kl_div_loss(inputs: mx.array, targets: mx.array, axis: int = -1,
                reduction: Reduction = "none") -> mx.array:
    """KL divergence with log-probability ``inputs`` and ``targets``."""
    loss = mx.sum(mx.exp(targets) * (targets - inputs), axis)
    return _reduce(loss, reduction)


def smooth_l1_loss(predictions: mx.array, targets: mx.array, beta: float = 1.0,
                   reduction: Reduction = "mean") -> mx.array:
    """Quadratic below ``beta``, linear above."""
    _same_shape(predictions, targets, "predictions", "targets")
    diff = mx.abs(predictions - targets)
    loss = mx.where(diff < beta, 0.5 * mx.square(diff) / beta, mx.abs(diff) - 0.5 * beta)
    return _reduce(loss, reduction)


def triplet_loss(anchors: mx.array, positives: mx.array, negatives: mx.array, axis: int = -1,
                 p: int = 2, margin: float = 1.0, eps: float = 1e-06,
                 reduction: Reduction = "none") -> mx.array:
    """max(d(a, p) - d(a, n) + margin, 0) with p-norm distances."""
    def dist(other: mx.array) -> mx.array:
        return mx.power(mx.power(mx.abs(anchors - other), p).sum(axis) + eps, 1.0 / p)

    loss = mx.maximum(dist(positives) - dist(negatives) + margin, 0)
    return _reduce(loss, reduction)


def hinge_loss(inputs: mx.array, targets: mx.array, reduction: Reduction = "none") -> mx.array:
    """max(1 - inputs * targets, 0)."""
    return _reduce(mx.maximum(1 - inputs * targets, 0), reduction)


def huber_loss(inputs: mx.array, targets: mx.array, delta: float = 1.0,
               reduction: Reduction = "none") -> mx.array:
    """0.5 e^2 for |e| <= delta, delta (|e| - delta / 2) beyond."""
    abs_err = mx.abs(inputs - targets)
    quadratic = mx.minimum(abs_err, delta)
    loss = 0.5 * quadratic**2 + delta * (abs_err - quadratic)
    return _reduce(loss, reduction)


def log_cosh_loss(inputs: mx.array, targets: mx.array,
                  reduction: Reduction = "none") -> mx.array:
    """log(cosh(inputs - targets)), computed stably."""
    err = inputs - targets
    return _reduce(mx.logaddexp(err, -err) - math.log(2), reduction)


def cosine_similarity_loss(x1: mx.array, x2: mx.array, axis: int = 1, eps: float = 1e-08,
                           reduction: Reduction = "none") -> mx.array:
    """Cosine similarity of ``x1`` and ``x2`` along ``axis`` (norm product clamped at eps)."""
    # the product first: mismatched inputs fail on their full shapes, as in MLX
    dots = mx.sum(x1 * x2, axis=axis)
    norms = mx.linalg.norm(x1, axis=axis) * mx.linalg.norm(x2, axis=axis)
    loss = dots / mx.maximum(norms, eps)
    return _reduce(loss, reduction)


def margin_ranking_loss(inputs1: mx.array, inputs2: mx.array, targets: mx.array,
                        margin: float = 0.0, reduction: Reduction = "none") -> mx.array:
    """max(0, -targets * (inputs1 - inputs2) + margin)."""
    if not inputs1.shape == inputs2.shape == targets.shape:
        raise ValueError("The shapes of the arguments do not match. The provided shapes are "
                         f"inputs1.shape={inputs1.shape}, inputs2.shape={inputs2.shape}, and "
                         f"targets.shape={targets.shape}.")
    loss = mx.maximum(0, -targets * (inputs1 - inputs2) + margin)
    return _reduce(loss, reduction)


def __getattr__(name: str):
    # a missing name reads as in MLX (programs print it): module 'mlx.nn.losses', not our module path
    raise AttributeError(f"module 'mlx.nn.losses' has no attribute {name!r}")
