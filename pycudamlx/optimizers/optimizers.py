"""``mlx.optimizers``' optimizers: a state tree mirroring the parameters, updated per leaf by
``apply_single``, hyperparameters that may be schedules of the step counter (kept in the state
as arrays, as MLX does), and MLX's update formulas so values match step for step."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple, Union

from .. import core as mx
from ..nn.layers.base import Module
from ..utils import tree_flatten, tree_map, tree_merge, tree_reduce, tree_unflatten

__all__ = ["Optimizer", "MultiOptimizer", "SGD", "RMSprop", "Adagrad", "AdaDelta", "Adam",
           "AdamW", "Adamax", "Lion", "Adafactor", "Muon", "clip_grad_norm"]

Schedulable = Union[float, Callable[[mx.array], mx.array]]


def _empty_like_tree(tree: Any) -> Any:
    return tree_map(lambda _: {}, tree)


class Optimizer:
    """Base class: subclasses define ``init_single(parameter, state)`` (fill a leaf's state
    dict) and ``apply_single(gradient, parameter, state)`` (return the new parameter)."""

    def __init__(self, schedulers: Optional[dict] = None) -> None:
        self._initialized = False
        self._state: dict = {"step": mx.array(0, mx.uint64)}
        self._schedulers = dict(schedulers or {})

    def update(self, model: Module, gradients: dict) -> None:
        """Apply ``gradients`` to ``model``'s parameters (``model.update``)."""
        model.update(self.apply_gradients(gradients, model))

    def init(self, parameters: dict) -> None:
        """Create state for every parameter in ``parameters`` that has none yet (existing state,
        e.g. loaded from a file, is kept)."""
        def merge(params: Any, state: Any) -> Any:
            if isinstance(params, (list, tuple)):
                state = list(state)
                for i in range(len(state)):
                    state[i] = merge(params[i], state[i])
                if len(state) != len(params):
                    state.extend(_empty_like_tree(params[len(state):]))
                return type(params)(state)
            if isinstance(params, dict):
                for k, v in params.items():
                    state[k] = merge(v, state[k]) if k in state else _empty_like_tree(v)
                return state
            return state

        merge(parameters, self._state)
        tree_map(lambda p, s: s or self.init_single(p, s), parameters, self._state)
        self._initialized = True

    def init_single(self, parameter: mx.array, state: dict) -> None:
        raise NotImplementedError()

    def apply_gradients(self, gradients: dict, parameters: dict) -> dict:
        """The updated parameters (a tree shaped like ``gradients``); advances the step and
        re-evaluates scheduled hyperparameters first."""
        if not self._initialized:
            self.init(gradients)
        for name, schedule in self._schedulers.items():
            self.state[name] = schedule(self.step)
        self.state["step"] = self.step + 1
        return tree_map(self.apply_single, gradients, parameters, self.state)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        raise NotImplementedError()

    @property
    def state(self) -> dict:
        """The optimizer state: 'step', hyperparameters, per-parameter state trees."""
        return self._state

    @state.setter
    def state(self, state: dict) -> None:
        self._initialized = False
        self._state = state

    @property
    def step(self) -> mx.array:
        return self.state["step"]

    @property
    def learning_rate(self) -> mx.array:
        return self.state["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, mx.array]) -> None:
        self.state["learning_rate"] = mx.array(learning_rate)

    def _maybe_schedule(self, name: str, param: Schedulable) -> None:
        """Store ``param`` as an array in the state; a callable becomes a schedule of the step."""
        if callable(param):
            self._schedulers[name] = param
            value = param(self.step)
        else:
            value = mx.array(param)
        self.state[name] = value


class MultiOptimizer(Optimizer):
    """Several optimizers over disjoint parameter sets: parameter (path, gradient) goes to the
    first optimizer whose filter accepts it, the last optimizer takes the rest."""

    def __init__(self, optimizers: list, filters: list = []) -> None:  # noqa: B006 (MLX's)
        super().__init__()
        self._state = {}
        if len(filters) != len(optimizers) - 1:
            raise ValueError(f"Given {len(filters)} filters but {len(optimizers) - 1} needed.")
        self.optimizers = optimizers
        self.filters = filters + [lambda *args, **kwargs: True]

    def _split_dictionary(self, gradients: dict) -> list:
        if len(self.optimizers) == 1:
            return [gradients]
        parts: list = [[] for _ in self.optimizers]
        for path, g in tree_flatten(gradients):
            for i, accept in enumerate(self.filters):
                if accept(path, g):
                    parts[i].append((path, g))
                    break
        return [tree_unflatten(p) if p else {} for p in parts]

    def init(self, parameters: dict) -> None:
        for opt, params in zip(self.optimizers, self._split_dictionary(parameters)):
            opt.init(params)

    def apply_gradients(self, gradients: dict, parameters: dict) -> dict:
        tree: dict = {}
        for opt, grads in zip(self.optimizers, self._split_dictionary(gradients)):
            tree = tree_merge(tree, opt.apply_gradients(grads, parameters))
        return tree

    @property
    def state(self) -> dict:
        return {"states": [o.state for o in self.optimizers]}

    @state.setter
    def state(self, state: dict) -> None:
        if "states" not in state or len(state["states"]) != len(self.optimizers):
            raise ValueError("Invalid state provided")
        for opt, s in zip(self.optimizers, state["states"]):
            opt.state = s

    @property
    def learning_rate(self) -> mx.array:
        return self.optimizers[0].learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, mx.array]) -> None:
        for opt in self.optimizers:
            opt.learning_rate = learning_rate


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening, Nesterov momentum and
    L2 weight decay (added to the gradient)."""

    def __init__(self, learning_rate: Schedulable, momentum: float = 0.0,
                 weight_decay: float = 0.0, dampening: float = 0.0,
                 nesterov: bool = False) -> None:
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening.")
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.dampening = dampening
        self.nesterov = nesterov

    def init_single(self, parameter: mx.array, state: dict) -> None:
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        lr = self.learning_rate.astype(gradient.dtype)
        if self.momentum <= 0:
            return parameter - lr * gradient
        v = self.momentum * state.get("v")
        v = v + ((1 - self.dampening) * gradient if self.dampening > 0 else gradient)
        update = gradient + self.momentum * v if self.nesterov else v
        state["v"] = v
        return parameter - lr * update


class RMSprop(Optimizer):
    """v = alpha v + (1 - alpha) g^2; p -= lr g / (sqrt(v) + eps)."""

    def __init__(self, learning_rate: Schedulable, alpha: float = 0.99,
                 eps: float = 1e-08) -> None:
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.alpha = alpha
        self.eps = eps
        if self.alpha < 0.0:
            raise ValueError(f"RMSprop alpha should be >=0, {self.alpha} was provided instead")
        if self.eps <= 0.0:
            raise ValueError(f"RMSprop epsilon should be >0, {self.eps} was provided instead")

    def init_single(self, parameter: mx.array, state: dict) -> None:
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        lr = self.learning_rate.astype(gradient.dtype)
        v = self.alpha * state["v"] + (1 - self.alpha) * mx.square(gradient)
        state["v"] = v
        return parameter - lr * gradient / (mx.sqrt(v) + self.eps)


class Adagrad(Optimizer):
    """v += g^2; p -= lr g / (sqrt(v) + eps)."""

    def __init__(self, learning_rate: Schedulable, eps: float = 1e-08) -> None:
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps
        if self.eps <= 0.0:
            raise ValueError(f"Adagrad epsilon should be >0, {self.eps} was provided instead")

    def init_single(self, parameter: mx.array, state: dict) -> None:
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        lr = self.learning_rate.astype(gradient.dtype)
        v = state["v"] + mx.square(gradient)
        state["v"] = v
        return parameter - lr * gradient / (mx.sqrt(v) + self.eps)


class AdaDelta(Optimizer):
    """AdaDelta (Zeiler 2012) with a learning rate on the update."""

    def __init__(self, learning_rate: Schedulable, rho: float = 0.9, eps: float = 1e-06) -> None:
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.rho = rho
        self.eps = eps
        if self.rho < 0.0:
            raise ValueError(f"AdaDelta rho should be >=0, {self.rho} was provided instead")
        if self.eps <= 0.0:
            raise ValueError(f"AdaDelta epsilon should be >0, {self.eps} was provided instead")

    def init_single(self, parameter: mx.array, state: dict) -> None:
        state["v"] = mx.zeros_like(parameter)
        state["u"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        lr = self.learning_rate.astype(gradient.dtype)
        rho, eps = self.rho, self.eps
        v = rho * state["v"] + (1 - rho) * mx.square(gradient)
        d = mx.sqrt(state["u"] + eps) / mx.sqrt(v + eps) * gradient
        state["u"] = rho * state["u"] + (1 - rho) * mx.square(d)
        state["v"] = v
        return parameter - lr * d


class Adam(Optimizer):
    """Adam; without ``bias_correction`` (MLX's default) the moments are used uncorrected."""

    def __init__(self, learning_rate: Schedulable, betas: List[float] = [0.9, 0.999],  # noqa: B006
                 eps: float = 1e-08, bias_correction: bool = False) -> None:
        super().__init__()
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Adam beta{i + 1} should be in [0, 1), {beta} was provided "
                                 "instead")
        if not 0.0 <= eps:
            raise ValueError(f"Adam epsilon should be >=0, {eps} was provided instead")
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.eps = eps
        self.bias_correction = bias_correction

    def init_single(self, parameter: mx.array, state: dict) -> None:
        state["m"] = mx.zeros_like(parameter)
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = b2 * state["v"] + (1 - b2) * mx.square(gradient)
        state["m"] = m
        state["v"] = v
        if self.bias_correction:
            step = self.step
            c1 = (lr / (1 - b1**step)).astype(gradient.dtype)
            c2 = mx.rsqrt(1 - b2**step).astype(gradient.dtype)
            return parameter - (c1 * m) / (mx.sqrt(v) * c2 + self.eps)
        return parameter - lr * m / (mx.sqrt(v) + self.eps)


class AdamW(Adam):
    """Adam with decoupled weight decay: p * (1 - lr * weight_decay) before the Adam step."""

    def __init__(self, learning_rate: Schedulable, betas: List[float] = [0.9, 0.999],  # noqa: B006
                 eps: float = 1e-08, weight_decay: float = 0.01,
                 bias_correction: bool = False) -> None:
        super().__init__(learning_rate=learning_rate, betas=betas, eps=eps,
                         bias_correction=bias_correction)
        self.weight_decay = weight_decay

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        lr = self.learning_rate.astype(gradient.dtype)
        return super().apply_single(gradient, parameter * (1 - lr * self.weight_decay), state)


class Adamax(Adam):
    """Adam with the infinity norm: v = max(b2 v, |g|)."""

    def __init__(self, learning_rate: Schedulable, betas: List[float] = [0.9, 0.999],  # noqa: B006
                 eps: float = 1e-08) -> None:
        super().__init__(learning_rate, betas, eps)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = mx.maximum(b2 * state["v"], mx.abs(gradient))
        state["m"] = m
        state["v"] = v
        return parameter - lr * m / (v + self.eps)


class Lion(Optimizer):
    """Lion: the sign of an interpolated momentum, with decoupled weight decay."""

    def __init__(self, learning_rate: Schedulable, betas: List[float] = [0.9, 0.99],  # noqa: B006
                 weight_decay: float = 0.0) -> None:
        super().__init__()
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Lion beta{i + 1} should be in [0, 1), {beta} was provided "
                                 "instead")
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.weight_decay = weight_decay

    def init_single(self, parameter: mx.array, state: dict) -> None:
        state["m"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = state["m"]
        c = b1 * m + (1 - b1) * gradient
        state["m"] = b2 * m + (1 - b2) * gradient
        if self.weight_decay > 0:
            parameter = (1 - lr * self.weight_decay) * parameter
        return parameter - lr * mx.sign(c)


class Adafactor(Optimizer):
    """Adafactor: factored second moments for matrices, relative step sizes by default."""

    def __init__(self, learning_rate: Union[float, Callable[[mx.array], mx.array], None] = None,
                 eps: Tuple[float, float] = (1e-30, 0.001), clip_threshold: float = 1.0,
                 decay_rate: float = -0.8, beta_1: Optional[float] = None,
                 weight_decay: float = 0.0, scale_parameter: bool = True,
                 relative_step: bool = True, warmup_init: bool = False) -> None:
        super().__init__()
        if learning_rate is not None:
            self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps
        self.clip_threshold = clip_threshold
        self.decay_rate = decay_rate
        self.beta_1 = beta_1
        self.weight_decay = weight_decay
        self.scale_parameter = scale_parameter
        self.relative_step = relative_step
        self.warmup_init = warmup_init

    def init_single(self, parameter: mx.array, state: dict) -> None:
        if parameter.ndim >= 2:
            shape, dtype = parameter.shape, parameter.dtype
            state["exp_avg_sq_row"] = mx.zeros(shape[:-1], dtype=dtype)
            state["exp_avg_sq_col"] = mx.zeros(shape[:-2] + shape[-1:], dtype=dtype)
        else:
            state["exp_avg_sq"] = mx.zeros_like(parameter)
        if self.beta_1 is not None:
            state["exp_avg"] = mx.zeros_like(parameter)

    def _compute_rms(self, inputs: mx.array) -> mx.array:
        return mx.sqrt(mx.mean(mx.square(inputs)))

    def _compute_learning_rate(self, step: mx.array, parameter_rms: mx.array) -> mx.array:
        if self.relative_step:
            min_step = 1e-06 * step if self.warmup_init else 0.01
            size = mx.minimum(min_step, mx.rsqrt(step))
        else:
            size = self.learning_rate
        size = size.astype(parameter_rms.dtype)
        scale = mx.maximum(self.eps[1], parameter_rms) if self.scale_parameter else 1.0
        return scale * size

    def _approximate_exp_moving_avg(self, row: mx.array, col: mx.array) -> mx.array:
        r = mx.rsqrt(row / mx.mean(row, axis=-1, keepdims=True))
        c = mx.rsqrt(col)
        return mx.expand_dims(r, axis=-1) * mx.expand_dims(c, axis=-2)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        step = self.step
        parameter_rms = self._compute_rms(parameter)
        lr = self._compute_learning_rate(step, parameter_rms)
        beta_2 = 1.0 - (step**self.decay_rate).astype(parameter_rms.dtype)
        update = mx.square(gradient) + self.eps[0]
        if gradient.ndim >= 2:
            row = beta_2 * state["exp_avg_sq_row"] + (1 - beta_2) * mx.mean(update, axis=-1)
            col = beta_2 * state["exp_avg_sq_col"] + (1 - beta_2) * mx.mean(update, axis=-2)
            state["exp_avg_sq_row"] = row
            state["exp_avg_sq_col"] = col
            update = self._approximate_exp_moving_avg(row, col) * gradient
        else:
            avg = beta_2 * state["exp_avg_sq"] + (1 - beta_2) * update
            state["exp_avg_sq"] = avg
            update = mx.rsqrt(avg) * gradient
        update = update / mx.maximum(1.0, self._compute_rms(update) / self.clip_threshold)
        update = lr * update
        if self.beta_1 is not None:
            update = self.beta_1 * state["exp_avg"] + (1 - self.beta_1) * update
            state["exp_avg"] = update
        if self.weight_decay != 0:
            parameter = parameter + parameter * (-self.weight_decay * lr)
        return parameter - update


class Muon(Optimizer):
    """Momentum orthogonalized by Newton-Schulz iterations for matrix parameters (SGD with
    momentum for the others)."""

    def __init__(self, learning_rate: Schedulable, momentum: float = 0.95,
                 weight_decay: float = 0.01, nesterov: bool = True, ns_steps: int = 5) -> None:
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.ns_steps = ns_steps

    def init_single(self, parameter: mx.array, state: dict) -> None:
        state["v"] = mx.zeros_like(parameter)

    def _zeropower_via_newtonschulz5(self, X: mx.array, steps: int) -> mx.array:
        assert X.ndim == 2, ("Expected a 2D array for Newton-Schulz iteration, got shape "
                             f"{X.shape} instead.")
        a, b, c = (3.4445, -4.775, 2.0315)
        transpose = X.shape[-2] > X.shape[-1]
        if transpose:
            X = X.T
        X = X / (mx.linalg.norm(X, keepdims=True) + 1e-07)
        for _ in range(steps):
            A = X @ X.T
            B = mx.addmm(b * A, A, A, beta=1.0, alpha=c)
            X = mx.addmm(a * X, B, X, beta=1.0, alpha=1.0)
        return X.T if transpose else X

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        v = self.momentum * state["v"] + (1 - self.momentum) * gradient
        state["v"] = v
        update = gradient * (1 - self.momentum) + v * self.momentum if self.nesterov else v
        lr = self.learning_rate.astype(gradient.dtype)
        if update.ndim >= 2:
            shape = update.shape
            if update.ndim > 2:
                update = mx.reshape(update, (update.shape[0], -1))
            update = self._zeropower_via_newtonschulz5(update, steps=self.ns_steps)
            if len(shape) > 2:
                update = mx.reshape(update, shape)
            lr = lr * max(1, update.shape[-2] / update.shape[-1]) ** 0.5
        return parameter - lr * update


def clip_grad_norm(grads: Any, max_norm: float) -> tuple[Any, mx.array]:
    """Scale ``grads`` so their global L2 norm is at most ``max_norm``; returns (clipped
    gradients, the norm before clipping)."""
    if max_norm < 0:
        raise ValueError(f"max_norm should be >=0, {max_norm} was provided instead")

    def squared_norm(g: mx.array) -> mx.array:
        if g.dtype == mx.float16:
            g = g.astype(mx.float32)
        return g.square().sum()

    total_norm = mx.sqrt(tree_reduce(lambda acc, g: acc + squared_norm(g), grads, 0.0))
    normalizer = mx.minimum(max_norm / (total_norm + 1e-06), 1.0)

    def scale(g: mx.array) -> mx.array:
        if mx.issubdtype(g.dtype, mx.floating):
            return (g * normalizer).astype(g.dtype)
        return g * normalizer

    return tree_map(scale, grads), total_norm
