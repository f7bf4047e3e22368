"""``nn.Module``: MLX's module, a dict of parameters (arrays) and child modules.

A module is a ``dict`` subclass: attributes that are arrays, dicts, lists or tuples live in the
dict (so ``parameters()`` and ``update()`` can walk them), every other attribute is a plain
Python attribute. Keys starting with ``_`` are never parameters; keys in ``_no_grad`` are
frozen (left out of ``trainable_parameters()``). Traversal order, error messages and the
strict checks of ``update``/``load_weights`` are MLX 0.32.4's.
"""

from __future__ import annotations

import textwrap
from typing import Any, Callable

from ... import core as mx
from ...utils import tree_flatten, tree_unflatten

__all__ = ["Module"]

_Filter = Callable[["Module", str, Any], bool]


def _default_is_leaf(module: "Module", key: str, value: Any) -> bool:
    return not isinstance(value, (Module, dict, list))


def _identity(value: Any) -> Any:
    return value


def _walk(owner: "Module", key: str, value: Any, filter_fn: _Filter, map_fn: Callable,
          is_leaf_fn: _Filter) -> Any:
    """One value of ``filter_and_map``: a leaf is mapped; a module recurses with itself as the
    owner; a dict/list keeps its shape (entries the filter rejects become ``{}``), its entries
    judged by the enclosing module under dotted keys ("layers.0")."""
    if is_leaf_fn(owner, key, value):
        return map_fn(value)
    if isinstance(value, Module):
        return {k: _walk(value, k, v, filter_fn, map_fn, is_leaf_fn)
                for k, v in value.items() if filter_fn(value, k, v)}
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            sub = f"{key}.{k}"
            out[k] = (_walk(owner, sub, v, filter_fn, map_fn, is_leaf_fn)
                      if filter_fn(owner, sub, v) else {})
        return out
    if isinstance(value, list):
        items = []
        for i, v in enumerate(value):
            sub = f"{key}.{i}"
            items.append(_walk(owner, sub, v, filter_fn, map_fn, is_leaf_fn)
                         if filter_fn(owner, sub, v) else {})
        return items
    raise RuntimeError("Unexpected leaf found while traversing the module")


class Module(dict):
    """Base class of every layer and model (see MLX's ``mlx.nn.Module``).

    Subclasses call ``super().__init__()`` and define ``__call__``. Arrays (and lists/dicts of
    them or of modules) assigned as attributes become parameters or children."""

    __call__: Callable

    def __init__(self) -> None:
        self._no_grad: set = set()
        self._training = True

    # -- attribute storage -------------------------------------------------------------------
    @property
    def training(self) -> bool:
        """True in training mode (``train()``), False after ``eval()``."""
        return self._training

    @property
    def state(self) -> "Module":
        """The module's own dict: every stored attribute, parameters included (a reference,
        not a copy)."""
        return self

    def __getattr__(self, key: str) -> Any:
        value = self.get(key, None)
        if value is not None:
            return value
        # A stored None or a missing key: ordinary attribute lookup (raises AttributeError
        # for a missing one; MLX returns None when a plain attribute of that name exists).
        super().__getattribute__(key)
        return None

    def __setattr__(self, key: str, value: Any) -> None:
        if isinstance(value, (mx.array, dict, list, tuple)):
            if key not in self and hasattr(self, key):
                delattr(self, key)
            self[key] = value
        else:
            super().__setattr__(key, value)
            self.pop(key, None)

    def __delattr__(self, key: str) -> None:
        if self.get(key, None) is not None:
            del self[key]
        else:
            super().__delattr__(key)

    def _extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = tree_flatten(self.children(), is_leaf=self.is_module)
        text = f"{type(self).__name__}({self._extra_repr()}"
        for name, child in children:
            text += "\n" + textwrap.indent(f"({name}): {child!r}", prefix="  ")
        if children:
            text += "\n"
        return text + ")"

    # -- filters -----------------------------------------------------------------------------
    @staticmethod
    def is_module(value: Any) -> bool:
        return isinstance(value, Module)

    @staticmethod
    def valid_child_filter(module: "Module", key: str, value: Any) -> bool:
        return isinstance(value, (dict, list))

    @staticmethod
    def valid_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        return isinstance(value, (dict, list, mx.array)) and not key.startswith("_")

    @staticmethod
    def trainable_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        return Module.valid_parameter_filter(module, key, value) and key not in module._no_grad

    def filter_and_map(self, filter_fn: _Filter, map_fn: Callable | None = None,
                       is_leaf_fn: _Filter | None = None) -> dict:
        """This module's contents, recursively, keeping what ``filter_fn(module, key, value)``
        accepts, leaves passed through ``map_fn``."""
        map_fn = map_fn or _identity
        is_leaf_fn = is_leaf_fn or _default_is_leaf
        return {k: _walk(self, k, v, filter_fn, map_fn, is_leaf_fn)
                for k, v in self.items() if filter_fn(self, k, v)}

    def parameters(self) -> dict:
        """Every array member (recursively) as a tree of dicts and lists."""
        return self.filter_and_map(self.valid_parameter_filter)

    def trainable_parameters(self) -> dict:
        """The array members that are not frozen."""
        return self.filter_and_map(self.trainable_parameter_filter)

    def children(self) -> dict:
        """The direct child modules."""
        return self.filter_and_map(self.valid_child_filter,
                                   is_leaf_fn=lambda m, k, v: isinstance(v, Module))

    def leaf_modules(self) -> dict:
        """The descendant modules that hold no modules themselves."""
        def is_leaf_module(m: Module, k: str, v: Any) -> bool:
            return isinstance(v, Module) and len(tree_flatten(v.children())) == 0

        return self.filter_and_map(self.valid_child_filter, is_leaf_fn=is_leaf_module)

    # -- updates -----------------------------------------------------------------------------
    def update(self, parameters: dict, strict: bool = True) -> "Module":
        """Replace parameters with those in the (partial) tree ``parameters``. With ``strict``
        every given key must exist and every replaced array must get an array."""
        def replace(container: Any, key: Any, new: Any) -> None:
            current = container[key]
            if isinstance(current, mx.array):
                if strict and not isinstance(new, mx.array):
                    raise ValueError(f"Received invalid type: {type(new).__name__}.")
                container[key] = new
            else:
                apply(current, new)

        def apply(dst: Any, src: Any) -> None:
            _merge(dst, src, replace, strict, "parameter")

        apply(self, parameters)
        return self

    def apply(self, map_fn: Callable[[mx.array], mx.array],
              filter_fn: _Filter | None = None) -> "Module":
        """Replace every parameter (selected by ``filter_fn``) by ``map_fn(parameter)``."""
        filter_fn = filter_fn or Module.valid_parameter_filter
        self.update(self.filter_and_map(filter_fn, map_fn))
        return self

    def update_modules(self, modules: dict, strict: bool = True) -> "Module":
        """Replace child modules with those in the (partial) tree ``modules``."""
        _update_modules(self, modules, strict)
        return self

    def apply_to_modules(self, apply_fn: Callable[[str, "Module"], Any]) -> "Module":
        """Call ``apply_fn(dotted_path, module)`` on this module and every descendant
        (depth first, last child first, as MLX's stack does)."""
        stack: list = [("", self)]
        while stack:
            prefix, module = stack.pop()
            apply_fn(prefix, module)
            prefix = "." + prefix if prefix else ""
            stack.extend(tree_flatten(module.children(), prefix=prefix, is_leaf=self.is_module))
        return self

    def modules(self) -> list:
        """Every module in this tree, this one first."""
        found: list = []
        self.apply_to_modules(lambda _, m: found.append(m))
        return found

    def named_modules(self) -> list:
        """(dotted path, module) for every module in this tree, this one first as ``""``."""
        found: list = []
        self.apply_to_modules(lambda k, m: found.append((k, m)))
        return found

    # -- freezing and modes ------------------------------------------------------------------
    def _validate_keys(self, keys: Any, strict: bool) -> list:
        keys = keys if isinstance(keys, list) else [keys]
        if strict:
            for k in keys:
                if k not in self:
                    raise KeyError(f"Module doesn't contain member {k}.")
        return keys

    def _validate_keys_recursive(self, keys: Any) -> None:
        keys = keys if isinstance(keys, list) else [keys]
        modules = self.modules()
        for k in keys:
            if not any(k in m for m in modules):
                raise KeyError(f"Module doesn't contain member {k}.")

    def freeze(self, *, recurse: bool = True, keys: str | list[str] | None = None,
               strict: bool = False) -> "Module":
        """Exclude parameters (all, or those named ``keys``) from ``trainable_parameters``."""
        def freeze_one(_: str, m: Module) -> None:
            local = keys
            if local is None:
                local = [k for k, _ in tree_flatten(m.filter_and_map(
                    lambda mm, k, v: not isinstance(v, Module)
                    and mm.valid_parameter_filter(mm, k, v)))]
            m._no_grad.update(m._validate_keys(local, check))

        check = strict
        if recurse:
            if strict and keys is not None:
                self._validate_keys_recursive(keys)
                check = False
            self.apply_to_modules(freeze_one)
        else:
            freeze_one("", self)
        return self

    def unfreeze(self, *, recurse: bool = True, keys: str | list[str] | None = None,
                 strict: bool = False) -> "Module":
        """Make parameters (all, or those named ``keys``) trainable again."""
        def unfreeze_one(_: str, m: Module) -> None:
            if keys is None:
                m._no_grad.clear()
            else:
                m._no_grad.difference_update(m._validate_keys(keys, check))

        check = strict
        if recurse:
            if strict and keys is not None:
                self._validate_keys_recursive(keys)
                check = False
            self.apply_to_modules(unfreeze_one)
        else:
            unfreeze_one("", self)
        return self

    def _set_training_mode(self, mode: bool) -> None:
        self._training = mode

    def train(self, mode: bool = True) -> "Module":
        """Set training mode on this module and every descendant (Dropout, BatchNorm care)."""
        self.apply_to_modules(lambda _, m: m._set_training_mode(mode))
        return self

    def eval(self) -> "Module":
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def set_dtype(self, dtype: mx.Dtype,
                  predicate: Callable[[mx.Dtype], bool] | None =
                  lambda t: mx.issubdtype(t, mx.floating)) -> None:
        """Cast parameters whose dtype ``predicate`` accepts (floating ones by default)."""
        if predicate is None:
            def predicate(_: mx.Dtype) -> bool:
                return True
        self.apply(lambda x: x.astype(dtype) if predicate(x.dtype) else x)

    # -- weights files -----------------------------------------------------------------------
    def load_weights(self, file_or_weights: str | list, strict: bool = True) -> "Module":
        """Load parameters from a ``.npz``/``.safetensors`` file or a list of (name, array).
        With ``strict`` the names must be exactly the model's and the shapes equal."""
        weights = file_or_weights
        if isinstance(weights, str):
            weights = list(mx.load(weights).items())
        if strict:
            given = dict(weights)
            current = tree_flatten(self.parameters(), destination={})
            extras = given.keys() - current.keys()
            if extras:
                raise ValueError(f"Received {len(extras)} parameters not in model: \n"
                                 + ",\n".join(sorted(extras)) + ".")
            missing = current.keys() - given.keys()
            if missing:
                raise ValueError(f"Missing {len(missing)} parameters: \n"
                                 + ",\n".join(sorted(missing)) + ".")
            for name, value in current.items():
                new = given[name]
                if not isinstance(new, mx.array):
                    raise ValueError(f"Expected mx.array but received {type(new)} for "
                                     f"parameter {name}")
                if new.shape != value.shape:
                    raise ValueError(f"Expected shape {value.shape} but received shape "
                                     f"{new.shape} for parameter {name}")
        if len(weights) != 0:
            self.update(tree_unflatten(weights), strict=False)
        return self

    def save_weights(self, file: str) -> None:
        """Save the parameters to ``.npz`` (``mx.savez``) or ``.safetensors``."""
        flat = tree_flatten(self.parameters(), destination={})
        if file.endswith(".npz"):
            mx.savez(file, **flat)
        elif file.endswith(".safetensors"):
            mx.save_safetensors(file, flat)
        else:
            raise ValueError(f"Unsupported file extension for {file}. Use '.npz' or "
                             "'.safetensors'.")


def _update_modules(dst: Any, modules: Any, strict: bool) -> None:
    def replace(container: Any, key: Any, new: Any) -> None:
        current = container[key]
        if isinstance(current, Module) and isinstance(new, Module):
            container[key] = new
        elif isinstance(current, (dict, list)):
            _update_modules(current, new, strict)
        elif strict and new != {}:
            raise ValueError(f"Received invalid type: {type(new).__name__}.")

    _merge(dst, modules, replace, strict, "sub-module")


def _merge(dst: Any, src: Any, replace: Any, strict: bool, noun: str) -> None:
    """``replace(dst, key, src[key])`` for each key of the dict or list ``src`` that ``dst``
    has; with ``strict``, a key ``dst`` lacks or a ``src`` of another type raises MLX's error."""
    if isinstance(src, dict):
        for k in src:
            if k in dst:
                replace(dst, k, src[k])
            elif strict:
                raise ValueError(f'Module does not have {noun} named "{k}".')
    elif isinstance(src, list):
        for i in range(len(src)):
            if i >= len(dst):
                if strict:
                    raise ValueError(f"List index {i} is out of bounds for destination of "
                                     f"length {len(dst)}.")
                continue
            replace(dst, i, src[i])
    elif strict:
        raise ValueError(f"Received invalid type: {type(src).__name__}.")
