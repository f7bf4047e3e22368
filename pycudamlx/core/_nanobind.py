"""nanobind's TypeError text for an argument of the wrong type, as MLX raises it.

MLX's bindings reject a float where an int is declared (``mx.repeat(x, 1.5)``), a string axis,
and so on, before the op runs, with a message that names the function's signature and the
types it was called with: "Invoked with types: mlx.core.array, float, kwargs = { axis: int }".
Our ops validate their arguments where they use them; when one is wrong they call
``argument_error`` (on the error path only, so the ops pay nothing), which rebuilds that text
from the call: the public function's frame gives the values, and the caller's bytecode tells
which arguments were passed by keyword (KW_NAMES / CALL_KW). Calls it cannot read (through
another op, an array method, ``f(*args, **kw)``) keep the op's own explanation."""

from __future__ import annotations

import dis
import inspect
import operator
import sys
from types import FrameType
from typing import Any

import numpy as np

from .. import dtypes as dt

#: nanobind's signature line of each mx.core function and mx.random sampler (the first line
#: of its docstring in MLX 0.32.4).
SIGNATURES: dict[str, str] = {
    'repeat': (
        'repeat(array: array, repeats: int, axis: int | None = None, *, stream: StreamOrDevice '
        '= None) -> array'),
    'tile': (
        'tile(a: array, reps: int | Sequence[int], /, *, stream: StreamOrDevice = None) -> '
        'array'),
    'roll': (
        'roll(a: array, shift: int | tuple[int], axis: None | int | tuple[int] = None, /, *, '
        'stream: StreamOrDevice = None) -> array'),
    'tri': (
        'tri(n: int, m: int | None = None, k: int = 0, dtype: Dtype | None = None, *, stream: '
        'StreamOrDevice = None) -> array'),
    'tril': (
        'tril(x: array, k: int = 0, *, stream: StreamOrDevice = None) -> array'),
    'triu': (
        'triu(x: array, k: int = 0, *, stream: StreamOrDevice = None) -> array'),
    'linspace': (
        'linspace(start: scalar, stop: scalar, num: int | None = 50, endpoint: bool = True, '
        'dtype: Dtype | None = float32, stream: StreamOrDevice = None) -> array'),
    'diff': (
        'diff(a: array, /, n: int = 1, axis: int = -1, *, stream: StreamOrDevice = None) -> '
        'array'),
    'transpose': (
        'transpose(a: array, /, axes: Sequence[int] | None = None, *, stream: StreamOrDevice = '
        'None) -> array'),
    'expand_dims': (
        'expand_dims(a: array, /, axis: int | Sequence[int], *, stream: StreamOrDevice = None) '
        '-> array'),
    'squeeze': (
        'squeeze(a: array, /, axis: None | int | Sequence[int] = None, *, stream: '
        'StreamOrDevice = None) -> array'),
    'split': (
        'split(a: array, /, indices_or_sections: int | Sequence[int], axis: int = 0, *, stream:'
        ' StreamOrDevice = None) -> array'),
    'eye': (
        'eye(n: int, m: int | None = None, k: int = 0, dtype: Dtype | None = float32, *, '
        'stream: StreamOrDevice = None) -> array'),
    'identity': (
        'identity(n: int, dtype: Dtype | None = float32, *, stream: StreamOrDevice = None) -> '
        'array'),
    'swapaxes': (
        'swapaxes(a: array, /, axis1 : int, axis2: int, *, stream: StreamOrDevice = None) -> '
        'array'),
    'moveaxis': (
        'moveaxis(a: array, /, source: int, destination: int, *, stream: StreamOrDevice = None)'
        ' -> array'),
    'flatten': (
        'flatten(a: array, /, start_axis: int = 0, end_axis: int = -1, *, stream: '
        'StreamOrDevice = None) -> array'),
    'unflatten': (
        'unflatten(a: array, /, axis: int, shape: Sequence[int], *, stream: StreamOrDevice = '
        'None) -> array'),
    'broadcast_to': (
        'broadcast_to(a: scalar | array, /, shape: Sequence[int], *, stream: StreamOrDevice = '
        'None) -> array'),
    'as_strided': (
        'as_strided(a: array, /, shape: Sequence[int] | None = None, strides: Sequence[int] | '
        'None = None, offset: int = 0, *, stream: StreamOrDevice = None) -> array'),
    'trace': (
        'trace(a: array, /, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Dtype | '
        'None = None, *, stream: StreamOrDevice = None) -> array'),
    'diag': (
        'diag(a: array, /, k: int = 0, *, stream: StreamOrDevice = None) -> array'),
    'diagonal': (
        'diagonal(a: array, offset: int = 0, axis1: int = 0, axis2: int = 1, stream: '
        'StreamOrDevice = None) -> array'),
    'reshape': (
        'reshape(a: array, /, shape: Sequence[int], *, stream: StreamOrDevice = None) -> array'),
    'sum': (
        'sum(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'mean': (
        'mean(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'prod': (
        'prod(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'max': (
        'max(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'min': (
        'min(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'all': (
        'all(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'any': (
        'any(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, *, '
        'stream: StreamOrDevice = None) -> array'),
    'argmax': (
        'argmax(a: array, /, axis: None | int = None, keepdims: bool = False, *, stream: '
        'StreamOrDevice = None) -> array'),
    'argmin': (
        'argmin(a: array, /, axis: None | int = None, keepdims: bool = False, *, stream: '
        'StreamOrDevice = None) -> array'),
    'var': (
        'var(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, '
        'ddof: int = 0, *, stream: StreamOrDevice = None) -> array'),
    'std': (
        'std(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, '
        'ddof: int = 0, *, stream: StreamOrDevice = None) -> array'),
    'logsumexp': (
        'logsumexp(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = '
        'False, *, stream: StreamOrDevice = None) -> array'),
    'softmax': (
        'softmax(a: array, /, axis: None | int | Sequence[int] = None, *, precise: bool = '
        'False, stream: StreamOrDevice = None) -> array'),
    'cumsum': (
        'cumsum(a: array, /, axis: int | None = None, *, reverse: bool = False, inclusive: bool'
        ' = True, dtype: Dtype | None = None, stream: StreamOrDevice = None) -> array'),
    'cumprod': (
        'cumprod(a: array, /, axis: int | None = None, *, reverse: bool = False, inclusive: '
        'bool = True, dtype: Dtype | None = None, stream: StreamOrDevice = None) -> array'),
    'cummax': (
        'cummax(a: array, /, axis: int | None = None, *, reverse: bool = False, inclusive: bool'
        ' = True, stream: StreamOrDevice = None) -> array'),
    'cummin': (
        'cummin(a: array, /, axis: int | None = None, *, reverse: bool = False, inclusive: bool'
        ' = True, stream: StreamOrDevice = None) -> array'),
    'logcumsumexp': (
        'logcumsumexp(a: array, /, axis: int | None = None, *, reverse: bool = False, '
        'inclusive: bool = True, stream: StreamOrDevice = None) -> array'),
    'median': (
        'median(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, '
        '*, stream: StreamOrDevice = None) -> array'),
    'count_nonzero': (
        'count_nonzero(a: array, /, *, axis: None | int | Sequence[int] = None, keepdims: bool '
        '= False, stream: StreamOrDevice = None) -> array'),
    'take': (
        'take(a: array, /, indices: int | array, axis: int | None = None, *, stream: '
        'StreamOrDevice = None) -> array'),
    'take_along_axis': (
        'take_along_axis(a: array, /, indices: array, axis: int | None = -1, *, stream: '
        'StreamOrDevice = None) -> array'),
    'put_along_axis': (
        'put_along_axis(a: array, /, indices: array, values: array, axis: int | None = None, *,'
        ' stream: StreamOrDevice = None) -> array'),
    'stack': (
        'stack(arrays: list[array], axis: int | None = 0, *, stream: StreamOrDevice = None) -> '
        'array'),
    'concatenate': (
        'concatenate(arrays: list[array], axis: int | None = 0, *, stream: StreamOrDevice = '
        'None) -> array'),
    'zeros': (
        'zeros(shape: int | Sequence[int], dtype: Dtype | None = float32, *, stream: '
        'StreamOrDevice = None) -> array'),
    'ones': (
        'ones(shape: int | Sequence[int], dtype: Dtype | None = float32, *, stream: '
        'StreamOrDevice = None) -> array'),
    'full': (
        'full(shape: int | Sequence[int], vals: scalar | array, dtype: Dtype | None = None, *, '
        'stream: StreamOrDevice = None) -> array'),
    'normal': (
        'normal(shape: Sequence[int] = [], dtype: Dtype | None = float32, loc: scalar | array |'
        ' None = None, scale: scalar | array | None = None, key: array | None = None, stream: '
        'StreamOrDevice = None) -> array'),
    'uniform': (
        'uniform(low: scalar | array = 0, high: scalar | array = 1, shape: Sequence[int] = [], '
        'dtype: Dtype | None = float32, key: array | None = None, stream: StreamOrDevice = '
        'None) -> array'),
    'randint': (
        'randint(low: scalar | array, high: scalar | array, shape: Sequence[int] = [], dtype: '
        'Dtype | None = int32, key: array | None = None, stream: StreamOrDevice = None) -> '
        'array'),
    'bernoulli': (
        'bernoulli(p: scalar | array = 0.5, shape: Sequence[int] | None = None, key: array | '
        'None = None, stream: StreamOrDevice = None) -> array'),
    'truncated_normal': (
        'truncated_normal(lower: scalar | array, upper: scalar | array, shape: Sequence[int] | '
        'None = None, dtype: Dtype | None = float32, key: array | None = None, stream: '
        'StreamOrDevice = None) -> array'),
    'gumbel': (
        'gumbel(shape: Sequence[int] = [], dtype: Dtype | None = float32, key: array | None = '
        'None, stream: StreamOrDevice = None) -> array'),
    'laplace': (
        'laplace(shape: Sequence[int] = [], dtype: Dtype | None = float32, loc: float = 0.0, '
        'scale: float = 1.0, key: array | None = None, stream: StreamOrDevice = None) -> array'),
    'categorical': (
        'categorical(logits: array, axis: int = -1, shape: Sequence[int] | None = None, '
        'num_samples: int | None = None, key: array | None = None, stream: StreamOrDevice = '
        'None) -> array'),
    'permutation': (
        'permutation(x: int | array, axis: int = 0, key: array | None = None, stream: '
        'StreamOrDevice = None) -> array'),
    'multivariate_normal': (
        'multivariate_normal(mean: array, cov: array, shape: Sequence[int] = [], dtype: Dtype |'
        ' None = float32, key: array | None = None, stream: StreamOrDevice = None) -> array'),
    'kron': (
        'kron(a: array, b: array, *, stream: StreamOrDevice = None) -> array'),
    'topk': (
        'topk(a: array, /, k: int, axis: None | int = -1, *, stream: StreamOrDevice = None) -> '
        'array'),
    'partition': (
        'partition(a: array, /, kth: int, axis: None | int = -1, *, stream: StreamOrDevice = '
        'None) -> array'),
    'argpartition': (
        'argpartition(a: array, /, kth: int, axis: None | int = -1, *, stream: StreamOrDevice ='
        ' None) -> array'),
    'abs': (
        'abs(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'add': (
        'add(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> array'),
    'addmm': (
        'addmm(c: array, a: array, b: array, /, alpha: float = 1.0, beta: float = 1.0,  *, '
        'stream: StreamOrDevice = None) -> array'),
    'allclose': (
        'allclose(a: array, b: array, /, rtol: float = 1e-05, atol: float = 1e-08, *, '
        'equal_nan: bool = False, stream: StreamOrDevice = None) -> array'),
    'arange': (
        'arange(start : int | float, stop : None | int | float, step : None | int | float, '
        'dtype: Dtype | None = None, *, stream: StreamOrDevice = None) -> array'),
    'arccos': (
        'arccos(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'arccosh': (
        'arccosh(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'arcsin': (
        'arcsin(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'arcsinh': (
        'arcsinh(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'arctan': (
        'arctan(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'arctan2': (
        'arctan2(a: scalar | array, b: scalar | array, /, *, stream: StreamOrDevice = None) -> '
        'array'),
    'arctanh': (
        'arctanh(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'argsort': (
        'argsort(a: array, /, axis: None | int = -1, *, stream: StreamOrDevice = None) -> array'),
    'array_equal': (
        'array_equal(a: scalar | array, b: scalar | array, equal_nan: bool = False, stream: '
        'StreamOrDevice = None) -> array'),
    'asarray': (
        'asarray(a: scalar | array | Sequence | DLPackCompatible, dtype: Dtype | None = None, '
        '*, copy: bool | None = None) -> array'),
    'astype': (
        'astype(a: array, dtype: Dtype, /, *, stream: StreamOrDevice = None) -> array'),
    'atleast_1d': (
        'atleast_1d(*arys: array, stream: StreamOrDevice = None) -> array | list[array]'),
    'atleast_2d': (
        'atleast_2d(*arys: array, stream: StreamOrDevice = None) -> array | list[array]'),
    'atleast_3d': (
        'atleast_3d(*arys: array, stream: StreamOrDevice = None) -> array | list[array]'),
    'bartlett': (
        'bartlett(M: int, *, stream: mlx.core.Stream | mlx.core.ThreadLocalStream | '
        'mlx.core.Device | mlx.core.DeviceType | None = None) -> mlx.core.array'),
    'bitwise_and': (
        'bitwise_and(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> '
        'array'),
    'bitwise_invert': (
        'bitwise_invert(a: scalar | array, stream: StreamOrDevice = None) -> array'),
    'bitwise_or': (
        'bitwise_or(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> '
        'array'),
    'bitwise_xor': (
        'bitwise_xor(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> '
        'array'),
    'blackman': (
        'blackman(M: int, *, stream: StreamOrDevice = None) -> array'),
    'block_masked_mm': (
        'block_masked_mm(a: array, b: array, /, block_size: int = 64, mask_out: array | None = '
        'None, mask_lhs: array | None = None, mask_rhs: array | None = None, *, stream: '
        'StreamOrDevice = None) -> array'),
    'broadcast_arrays': (
        'broadcast_arrays(*arrays: array, stream: StreamOrDevice = None) -> tuple[array, ...]'),
    'broadcast_shapes': (
        'broadcast_shapes(*shapes: Sequence[int]) -> tuple[int]'),
    'can_cast': (
        'can_cast(from_: array | Dtype, to: Dtype) -> bool'),
    'ceil': (
        'ceil(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'checkpoint': (
        'checkpoint(fun: Callable[P, R]) -> Callable[P, R]'),
    'clear_cache': (
        'clear_cache() -> None'),
    'clear_streams': (
        'clear_streams() -> None'),
    'clip': (
        'clip(a: array, /, a_min: scalar | array | None, a_max: scalar | array | None, *, '
        'stream: StreamOrDevice = None) -> array'),
    'compile': (
        'compile(fun: Callable[P, R], inputs: object | None = None, outputs: object | None = '
        'None, shapeless: bool = False) -> Callable[P, R]'),
    'concat': (
        'concat(arrays: list[array], axis: int | None = 0, *, stream: StreamOrDevice = None) ->'
        ' array'),
    'conj': (
        'conj(a: array, *, stream: StreamOrDevice = None) -> array'),
    'conjugate': (
        'conjugate(a: array, *, stream: StreamOrDevice = None) -> array'),
    'contiguous': (
        'contiguous(a: array, /, allow_col_major: bool = False, *, stream: StreamOrDevice = '
        'None) -> array'),
    'conv1d': (
        'conv1d(input: array, weight: array, /, stride: int = 1, padding: int = 0, dilation: '
        'int = 1, groups: int = 1, *, stream: StreamOrDevice = None) -> array'),
    'conv2d': (
        'conv2d(input: array, weight: array, /, stride: int | tuple[int, int] = 1, padding: int'
        ' | tuple[int, int] = 0, dilation: int | tuple[int, int] = 1, groups: int = 1, *, '
        'stream: StreamOrDevice = None) -> array'),
    'conv3d': (
        'conv3d(input: array, weight: array, /, stride: int | tuple[int, int, int] = 1, '
        'padding: int | tuple[int, int, int] = 0, dilation: int | tuple[int, int, int] = 1, '
        'groups: int = 1, *, stream: StreamOrDevice = None) -> array'),
    'conv_general': (
        'conv_general(input: array, weight: array, /, stride: int | Sequence[int] = 1, padding:'
        ' int | Sequence[int] | tuple[Sequence[int], Sequence[int]] = 0, kernel_dilation: int |'
        ' Sequence[int] = 1, input_dilation: int | Sequence[int] = 1, groups: int = 1, flip: '
        'bool = False, *, stream: StreamOrDevice = None) -> array'),
    'conv_transpose1d': (
        'conv_transpose1d(input: array, weight: array, /, stride: int = 1, padding: int = 0, '
        'dilation: int = 1, output_padding: int = 0, groups: int = 1, *, stream: StreamOrDevice'
        ' = None) -> array'),
    'conv_transpose2d': (
        'conv_transpose2d(input: array, weight: array, /, stride: int | tuple[int, int] = 1, '
        'padding: int | tuple[int, int] = 0, dilation: int | tuple[int, int] = 1, '
        'output_padding: int | tuple[int, int] = 0, groups: int = 1, *, stream: StreamOrDevice '
        '= None) -> array'),
    'conv_transpose3d': (
        'conv_transpose3d(input: array, weight: array, /, stride: int | tuple[int, int, int] = '
        '1, padding: int | tuple[int, int, int] = 0, dilation: int | tuple[int, int, int] = 1, '
        'output_padding: int | tuple[int, int, int] = 0, groups: int = 1, *, stream: '
        'StreamOrDevice = None) -> array'),
    'convolve': (
        'convolve(a: array, v: array, /, mode: str = "full", *, stream: StreamOrDevice = None) '
        '-> array'),
    'cos': (
        'cos(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'cosh': (
        'cosh(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'default_device': (
        'default_device() -> mlx.core.Device'),
    'default_stream': (
        'default_stream(device: Device | DeviceType) -> Stream'),
    'degrees': (
        'degrees(a: scalar | array, /, *, stream: StreamOrDevice = None) -> array'),
    'dequantize': (
        'dequantize(w: array, /, scales: array, biases: array | None = None, group_size: int | '
        "None = None, bits: int | None = None, mode: str = 'affine', global_scale: array | None"
        ' = None, dtype: Dtype | None = None, *, stream: StreamOrDevice = None) -> array'),
    'device_count': (
        'device_count(device_type: mlx.core.DeviceType) -> int'),
    'device_info': (
        'device_info(d: None | Device | DeviceType = None) -> dict[str, str | int]'),
    'disable_compile': (
        'disable_compile() -> None'),
    'divide': (
        'divide(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> array'),
    'divmod': (
        'divmod(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> array'),
    'einsum': (
        'einsum(subscripts: str, *operands, stream: StreamOrDevice = None) -> array'),
    'enable_compile': (
        'enable_compile() -> None'),
    'equal': (
        'equal(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> array'),
    'erf': (
        'erf(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'erfinv': (
        'erfinv(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'eval': (
        'eval(*args) -> None'),
    'exp': (
        'exp(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'expm1': (
        'expm1(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'export_function': (
        'export_function(file_or_callback: str | Callable, fun: Callable, *args, shapeless: '
        'bool = False, metadata: str | None = None, **kwargs) -> None'),
    'export_to_dot': (
        'export_to_dot(file: object, *args, **kwargs) -> None'),
    'exporter': (
        'exporter(file: str, fun: collections.abc.Callable, *, shapeless: bool = False, '
        'metadata: str | None = None) -> mlx.core.FunctionExporter'),
    'flip': (
        'flip(a: array, /, axis: None | int | Sequence[int] = None, *, stream: StreamOrDevice ='
        ' None) -> array'),
    'floor': (
        'floor(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'floor_divide': (
        'floor_divide(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> '
        'array'),
    'from_dlpack': (
        'from_dlpack(x: DLPackCompatible, /, *, copy: bool | None = None) -> array'),
    'from_fp8': (
        'from_fp8(x: array, dtype: Dtype = bfloat16, *, stream: StreamOrDevice = None) -> array'),
    'full_like': (
        'full_like(a: array, vals: scalar | array, dtype: Dtype | None = None, *, stream: '
        'StreamOrDevice = None) -> array'),
    'gather_mm': (
        'gather_mm(a: array, b: array, /, lhs_indices: array | None = None, rhs_indices: array '
        '| None = None, *, sorted_indices: bool = False, stream: StreamOrDevice = None) -> '
        'array'),
    'gather_qmm': (
        'gather_qmm(x: array, w: array, /, scales: array, biases: array | None = None, '
        'lhs_indices: array | None = None, rhs_indices: array | None = None, transpose: bool = '
        "True, group_size: int | None = None, bits: int | None = None, mode: str = 'affine', "
        'global_scale: array | None = None, *, sorted_indices: bool = False, stream: '
        'StreamOrDevice = None) -> array'),
    'gather_qqmm': (
        'gather_qqmm(x: array, w: array, /, scales: array | None = None, lhs_indices: array | '
        'None = None, rhs_indices: array | None = None, group_size: int | None = None, bits: '
        "int | None = None, mode: str = 'nvfp4', global_scale_x: array | None = None, "
        'global_scale_w: array | None = None, *, sorted_indices: bool = False, stream: '
        'StreamOrDevice = None) -> array'),
    'get_active_memory': (
        'get_active_memory() -> int'),
    'get_array_buffer_size': (
        'get_array_buffer_size(*args) -> int'),
    'get_cache_memory': (
        'get_cache_memory() -> int'),
    'get_memory_limit': (
        'get_memory_limit() -> int'),
    'get_peak_memory': (
        'get_peak_memory() -> int'),
    'get_printoptions': (
        'get_printoptions() -> mlx.core.PrintOptions'),
    'grad': (
        'grad(fun: Callable[P, R], argnums: int | Sequence[int] | None = None, argnames: str | '
        'Sequence[str] = []) -> Callable[P, Any]'),
    'greater': (
        'greater(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> array'),
    'greater_equal': (
        'greater_equal(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> '
        'array'),
    'hadamard_transform': (
        'hadamard_transform(a: array, scale: float | None = None, stream: StreamOrDevice = '
        'None) -> array'),
    'hamming': (
        'hamming(M: int, *, stream: StreamOrDevice = None) -> array'),
    'hanning': (
        'hanning(M: int, *, stream: mlx.core.Stream | mlx.core.ThreadLocalStream | '
        'mlx.core.Device | mlx.core.DeviceType | None = None) -> mlx.core.array'),
    'imag': (
        'imag(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'import_function': (
        'import_function(file: str, return_metadata: bool = False) -> Callable | '
        'tuple[Callable, str]'),
    'inner': (
        'inner(a: array, b: array, /, *, stream: StreamOrDevice = None) -> array'),
    'is_available': (
        'is_available(device: Device | DeviceType) -> bool'),
    'isclose': (
        'isclose(a: array, b: array, /, rtol: float = 1e-05, atol: float = 1e-08, *, equal_nan:'
        ' bool = False, stream: StreamOrDevice = None) -> array'),
    'isdtype': (
        'isdtype(dtype: Dtype, kind: Dtype | str | tuple[Dtype | str, ...]) -> bool'),
    'isfinite': (
        'isfinite(a: array, stream: StreamOrDevice = None) -> array'),
    'isinf': (
        'isinf(a: array, stream: StreamOrDevice = None) -> array'),
    'isnan': (
        'isnan(a: array, stream: StreamOrDevice = None) -> array'),
    'isneginf': (
        'isneginf(a: array, stream: StreamOrDevice = None) -> array'),
    'isposinf': (
        'isposinf(a: array, stream: StreamOrDevice = None) -> array'),
    'issubdtype': (
        'issubdtype(arg1: Dtype | DtypeCategory, arg2: Dtype | DtypeCategory) -> bool'),
    'jvp': (
        'jvp(fun: Callable, primals: list[array], tangents: list[array]) -> tuple[list[array], '
        'list[array]]'),
    'left_shift': (
        'left_shift(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> '
        'array'),
    'less': (
        'less(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> array'),
    'less_equal': (
        'less_equal(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> '
        'array'),
    'load': (
        'load(file: file | str | pathlib.Path, /, format: str | None = None, return_metadata: '
        'bool = False, *, stream: StreamOrDevice = None) -> array | dict[str, array] | '
        'tuple[dict[str, array], dict[str, Any]]'),
    'log': (
        'log(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'log10': (
        'log10(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'log1p': (
        'log1p(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'log2': (
        'log2(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'logaddexp': (
        'logaddexp(a: scalar | array, b: scalar | array, /, *, stream: StreamOrDevice = None) '
        '-> array'),
    'logical_and': (
        'logical_and(a: array, b: array, /, *, stream: StreamOrDevice = None) -> array'),
    'logical_not': (
        'logical_not(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'logical_or': (
        'logical_or(a: array, b: array, /, *, stream: StreamOrDevice = None) -> array'),
    'logical_xor': (
        'logical_xor(a: scalar | array, b: scalar | array, /, *, stream: StreamOrDevice = None)'
        ' -> array'),
    'matmul': (
        'matmul(a: array, b: array, /, *, stream: StreamOrDevice = None) -> array'),
    'matrix_transpose': (
        'matrix_transpose(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'maximum': (
        'maximum(a: scalar | array, b: scalar | array, /, *, stream: StreamOrDevice = None) -> '
        'array'),
    'meshgrid': (
        "meshgrid(*arrays: array, sparse: bool | None = False, indexing: str | None = 'xy', "
        'stream: StreamOrDevice = None) -> tuple[array, ...]'),
    'minimum': (
        'minimum(a: scalar | array, b: scalar | array, /, *, stream: StreamOrDevice = None) -> '
        'array'),
    'minmax': (
        'minmax(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = False, '
        '*, stream: StreamOrDevice = None) -> tuple[array, array]'),
    'multiply': (
        'multiply(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> array'),
    'nan_to_num': (
        'nan_to_num(a: scalar | array, nan: float = 0, posinf: float | None = None, neginf: '
        'float | None = None, *, stream: StreamOrDevice = None) -> array'),
    'negative': (
        'negative(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'new_stream': (
        'new_stream(device: Device | DeviceType) -> Stream'),
    'new_thread_local_stream': (
        'new_thread_local_stream(device: Device | DeviceType) -> ThreadLocalStream'),
    'new_thread_unsafe_stream': (
        'new_thread_unsafe_stream(device: Device | DeviceType) -> Stream'),
    'not_equal': (
        'not_equal(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> '
        'array'),
    'ones_like': (
        'ones_like(a: array, /, dtype: Dtype | None = None, *, stream: StreamOrDevice = None) '
        '-> array'),
    'outer': (
        'outer(a: array, b: array, /, *, stream: StreamOrDevice = None) -> array'),
    'pad': (
        'pad(a: array, pad_width: int | tuple[int] | tuple[int, int] | list[tuple[int, int]], '
        "mode: Literal['constant', 'edge', 'reflect', 'symmetric'] = 'constant', "
        'constant_values: scalar | array = 0, *, stream: StreamOrDevice = None) -> array'),
    'permute_dims': (
        'permute_dims(a: array, /, axes: Sequence[int] | None = None, *, stream: StreamOrDevice'
        ' = None) -> array'),
    'positive': (
        'positive(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'power': (
        'power(a: scalar | array, b: scalar | array, /, *, stream: StreamOrDevice = None) -> '
        'array'),
    'printoptions': (
        'printoptions(precision: int = -1) -> mlx.core._PrintOptionsContext'),
    'qqmm': (
        'qqmm(x: array, w: array, scales: array | None = None, group_size: int | None = None, '
        "bits: int | None = None, mode: str = 'nvfp4', global_scale_x: array | None = None, "
        'global_scale_w: array | None = None, *, stream: StreamOrDevice = None) -> array'),
    'quantize': (
        'quantize(w: array, /, group_size: int | None = None, bits: int | None = None, mode: '
        "str = 'affine', *, global_scale: array | None = None, stream: StreamOrDevice = None) "
        '-> tuple[array, array, array]'),
    'quantized_matmul': (
        'quantized_matmul(x: array, w: array, /, scales: array, biases: array | None = None, '
        'transpose: bool = True, group_size: int | None = None, bits: int | None = None, mode: '
        "str = 'affine', *, stream: StreamOrDevice = None) -> array"),
    'radians': (
        'radians(a: scalar | array, /, *, stream: StreamOrDevice = None) -> array'),
    'real': (
        'real(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'reciprocal': (
        'reciprocal(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'remainder': (
        'remainder(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> '
        'array'),
    'reset_peak_memory': (
        'reset_peak_memory() -> None'),
    'result_type': (
        'result_type(*arrays_and_dtypes: array | Dtype) -> Dtype'),
    'right_shift': (
        'right_shift(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> '
        'array'),
    'round': (
        'round(a: array, /, decimals: int = 0, stream: StreamOrDevice = None) -> array'),
    'rsqrt': (
        'rsqrt(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'save': (
        'save(file: file | str | pathlib.Path, arr: array) -> None'),
    'searchsorted': (
        "searchsorted(sorted_sequence: array, values: array, /, side: str = 'left', *, stream: "
        'StreamOrDevice = None) -> array'),
    'segmented_mm': (
        'segmented_mm(a: array, b: array, /, segments: array, *, stream: StreamOrDevice = None)'
        ' -> array'),
    'set_cache_limit': (
        'set_cache_limit(limit: int) -> int'),
    'set_default_device': (
        'set_default_device(device: Device | DeviceType) -> None'),
    'set_default_stream': (
        'set_default_stream(stream: mlx.core.Stream) -> None'),
    'set_memory_limit': (
        'set_memory_limit(limit: int) -> int'),
    'set_printoptions': (
        'set_printoptions(precision: int = -1) -> None'),
    'set_wired_limit': (
        'set_wired_limit(limit: int) -> int'),
    'sigmoid': (
        'sigmoid(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'sign': (
        'sign(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'sin': (
        'sin(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'sinh': (
        'sinh(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'slice': (
        'slice(a: array, start_indices: array, axes: Sequence[int], slice_size: Sequence[int], '
        '*, stream: StreamOrDevice = None) -> array'),
    'slice_update': (
        'slice_update(a: array, update: array, start_indices: array, axes: Sequence[int], *, '
        'stream: StreamOrDevice = None) -> array'),
    'sort': (
        'sort(a: array, /, axis: None | int = -1, *, stream: StreamOrDevice = None) -> array'),
    'sqrt': (
        'sqrt(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'square': (
        'square(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'stop_gradient': (
        'stop_gradient(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'stream': (
        'stream(s: mlx.core.Stream | mlx.core.ThreadLocalStream | mlx.core.Device | '
        'mlx.core.DeviceType) -> mlx.core.StreamContext'),
    'subtract': (
        'subtract(a: scalar | array, b: scalar | array, stream: StreamOrDevice = None) -> array'),
    'synchronize': (
        'synchronize(stream: mlx.core.Stream | mlx.core.ThreadLocalStream | mlx.core.Device | '
        'mlx.core.DeviceType | None = None) -> None'),
    'tan': (
        'tan(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'tanh': (
        'tanh(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'tensordot': (
        'tensordot(a: array, b: array, /, axes: int | list[Sequence[int]] = 2, *, stream: '
        'StreamOrDevice = None) -> array'),
    'to_fp8': (
        'to_fp8(x: array, *, stream: StreamOrDevice = None) -> array'),
    'trunc': (
        'trunc(a: array, /, *, stream: StreamOrDevice = None) -> array'),
    'unique': (
        'unique(a: array, /, size: int, return_index: bool = False, return_inverse: bool = '
        'False, return_counts: bool = False, fill_value: scalar | array | None = None, *, '
        'stream: StreamOrDevice = None) -> array | tuple[array, ...]'),
    'unstack': (
        'unstack(x: array, /, *, axis: int = 0, stream: StreamOrDevice = None) -> tuple[array, '
        '...]'),
    'value_and_grad': (
        'value_and_grad(fun: Callable[P, R], argnums: int | Sequence[int] | None = None, '
        'argnames: str | Sequence[str] = []) -> Callable[P, tuple[R, Any]]'),
    'vecdot': (
        'vecdot(a: array, b: array, /, *, axis: int = -1, stream: StreamOrDevice = None) -> '
        'array'),
    'view': (
        'view(a: scalar | array, dtype: Dtype, stream: StreamOrDevice = None) -> array'),
    'vjp': (
        'vjp(fun: Callable, primals: list[array], cotangents: list[array]) -> '
        'tuple[list[array], list[array]]'),
    'vmap': (
        'vmap(fun: Callable[P, R], in_axes: object = 0, out_axes: object = 0) -> Callable[P, R]'),
    'where': (
        'where(condition: scalar | array, x: scalar | array, y: scalar | array, /, *, stream: '
        'StreamOrDevice = None) -> array'),
    'zeros_like': (
        'zeros_like(a: array, /, dtype: Dtype | None = None, *, stream: StreamOrDevice = None) '
        '-> array'),
}

_STREAM = ("mlx.core.Stream | mlx.core.ThreadLocalStream | mlx.core.Device | "
           "mlx.core.DeviceType | None")
_RETURNS = {"array": " = None) -> mlx.core.array", "list": " = None) -> list[mlx.core.array]"}

#: The array methods' own signature lines (``self``, the long stream type): (text up to the
#: stream's type, return kind).
_METHODS: dict[str, tuple[str, str]] = {
    'sum': (
        'sum(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, *, stream: ', 'array'),
    'mean': (
        'mean(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool ='
        ' False, *, stream: ', 'array'),
    'prod': (
        'prod(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool ='
        ' False, *, stream: ', 'array'),
    'max': (
        'max(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, *, stream: ', 'array'),
    'min': (
        'min(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, *, stream: ', 'array'),
    'all': (
        'all(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, *, stream: ', 'array'),
    'any': (
        'any(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, *, stream: ', 'array'),
    'argmax': (
        'argmax(self, axis: int | None = None, keepdims: bool = False, *, stream: ', 'array'),
    'argmin': (
        'argmin(self, axis: int | None = None, keepdims: bool = False, *, stream: ', 'array'),
    'var': (
        'var(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, ddof: int = 0, *, correction: int | None = None, stream: ', 'array'),
    'std': (
        'std(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: bool = '
        'False, ddof: int = 0, *, correction: int | None = None, stream: ', 'array'),
    'logsumexp': (
        'logsumexp(self, axis: int | collections.abc.Sequence[int] | None = None, keepdims: '
        'bool = False, *, stream: ', 'array'),
    'cumsum': (
        'cumsum(self, axis: int | None = None, *, reverse: bool = False, inclusive: bool = '
        'True, stream: ', 'array'),
    'cumprod': (
        'cumprod(self, axis: int | None = None, *, reverse: bool = False, inclusive: bool = '
        'True, stream: ', 'array'),
    'cummax': (
        'cummax(self, axis: int | None = None, *, reverse: bool = False, inclusive: bool = '
        'True, stream: ', 'array'),
    'cummin': (
        'cummin(self, axis: int | None = None, *, reverse: bool = False, inclusive: bool = '
        'True, stream: ', 'array'),
    'logcumsumexp': (
        'logcumsumexp(self, axis: int | None = None, *, reverse: bool = False, inclusive: '
        'bool = True, stream: ', 'array'),
    'swapaxes': (
        'swapaxes(self, axis1: int, axis2: int, *, stream: ', 'array'),
    'moveaxis': (
        'moveaxis(self, source: int, destination: int, *, stream: ', 'array'),
    'flatten': (
        'flatten(self, start_axis: int = 0, end_axis: int = -1, *, stream: ', 'array'),
    'squeeze': (
        'squeeze(self, axis: int | collections.abc.Sequence[int] | None = None, *, stream: ',
        'array'),
    'split': (
        'split(self, indices_or_sections: int | tuple[int, ...], axis: int = 0, *, stream: ',
        'list'),
    'diagonal': (
        'diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1, stream: ', 'array'),
    'diag': (
        'diag(self, k: int = 0, *, stream: ', 'array'),
    'round': (
        'round(self, decimals: int = 0, *, stream: ', 'array'),
}
METHOD_SIGNATURES: dict[str, str] = {
    name: head + _STREAM + _RETURNS[ret] for name, (head, ret) in _METHODS.items()}

_OURS = "pycudamlx."
_ARRAY_MODULE = "pycudamlx.core.array"


def _keyword_names(caller: FrameType) -> tuple[tuple[str, ...], int] | None:
    """(names passed by keyword, number of arguments) of the call the caller is making now,
    read from its bytecode; None where the call is not a plain call."""
    code = caller.f_code
    before = [i for i in dis.get_instructions(code) if i.offset <= caller.f_lasti]
    if not before:
        return None
    call = before[-1]
    if call.opname == "CALL":  # 3.11 / 3.12: KW_NAMES (a co_consts index) precedes PRECALL/CALL
        names: tuple[str, ...] = ()
        for ins in reversed(before[-4:-1]):
            if ins.opname == "KW_NAMES":
                names = code.co_consts[ins.arg]
                break
        return names, call.arg
    if call.opname == "CALL_KW":  # 3.13+: the names tuple is the constant loaded just before
        prev = before[-2] if len(before) > 1 else None
        if prev is not None and prev.opname == "LOAD_CONST" and isinstance(prev.argval, tuple):
            return prev.argval, call.arg
    return None


def _invoked(frame: FrameType, caller: FrameType, fn: str, method: bool) -> str | None:
    if method:
        func = type(frame.f_locals.get("self")).__dict__.get(fn)
    else:
        func = frame.f_globals.get(fn)
    if getattr(func, "__code__", None) is not frame.f_code:
        return None
    call = _keyword_names(caller)
    if call is None:
        return None
    names, argc = call
    values = frame.f_locals
    # the code object, not inspect.signature: a function may hide a ``*_extra`` that only
    # collects positional arguments passed where MLX's are keyword-only
    code = frame.f_code
    params = code.co_varnames[:code.co_argcount]
    n_positional = argc - len(names) + (1 if method else 0)  # a method call's argc omits self
    if any(n not in values for n in names):
        return None
    extra: tuple = ()
    if n_positional > len(params) and code.co_flags & inspect.CO_VARARGS:
        extra = values.get(code.co_varnames[code.co_argcount + code.co_kwonlyargcount], ())
        if len(params) + len(extra) != n_positional:
            return None
    elif not 0 <= n_positional <= len(params):
        return None
    parts = [dt._type_name(values[p]) for p in params[:n_positional]]
    parts += [dt._type_name(v) for v in extra]
    if names:
        kw = ", ".join(f"{n}: {dt._type_name(values[n])}" for n in names)
        parts.append(f"kwargs = {{ {kw} }}")
    return ", ".join(parts)


def argument_error(fn: str, fallback: str | TypeError, sig: str | None = None) -> TypeError:
    """The TypeError for a wrongly typed argument of ``mx.<fn>`` or of the method
    ``array.<fn>`` (signature line ``sig``, by default from SIGNATURES / METHOD_SIGNATURES):
    nanobind's text when the call came straight from user code, else ``fallback``."""
    frame = sys._getframe(1)
    # the outermost pycudamlx frame: the public function (or method) the user called
    while frame.f_back is not None and frame.f_back.f_globals.get(
            "__name__", "").startswith(_OURS):
        frame = frame.f_back
    caller = frame.f_back
    method = frame.f_globals.get("__name__") == _ARRAY_MODULE and "self" in frame.f_locals
    if method:  # the method's own line, not the op's
        sig = METHOD_SIGNATURES.get(fn)
    elif sig is None:
        sig = SIGNATURES.get(fn)
    if sig is not None and caller is not None:
        try:
            invoked = _invoked(frame, caller, fn, method)
        except Exception:  # noqa: BLE001 - reading the call is best effort
            invoked = None
        if invoked is not None:
            return TypeError(
                f"{fn}(): incompatible function arguments. The following argument types "
                f"are supported:\n    1. {sig}\n\nInvoked with types: {invoked}")
    return fallback if isinstance(fallback, TypeError) else TypeError(fallback)


_RANDOM_SPLIT = "split(key: array, num: int = 2, stream: StreamOrDevice = None) -> array"


def outer_argument_error(fallback: str) -> TypeError:
    """nanobind's TypeError for an argument of the wrong type found by a helper (a ``stream=``
    of ``"cpu"``, a ``key=`` list), named after the public function the user called;
    ``fallback`` where that cannot be read."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_back.f_globals.get(
            "__name__", "").startswith(_OURS):
        frame = frame.f_back
    fn = frame.f_code.co_name
    if fn in ("fn", "method"):  # a generated op or method: its name is a closure variable
        fn = frame.f_locals.get("name")
        if not isinstance(fn, str):
            return TypeError(fallback)
    if frame.f_globals.get("__name__") == _ARRAY_MODULE and "self" in frame.f_locals:
        return argument_error(fn, fallback)
    # the module's own signature lines (a _SIG table, or a _sig(fn) function), else mx.core's
    g = frame.f_globals
    own, make_sig = g.get("_SIG"), g.get("_sig")
    sig = own.get(fn) if isinstance(own, dict) else None
    if sig is None and callable(make_sig) and fn in g.get("__all__", ()):
        sig = make_sig(fn)
    module = g.get("__name__", "")
    if module.endswith(".random") and fn == "split":  # not mx.split's line
        sig = _RANDOM_SPLIT
    elif sig is None and module.startswith("pycudamlx.core"):
        sig = SIGNATURES.get(fn)
    return argument_error(fn, fallback, sig) if sig else TypeError(fallback)


stream_argument_error = outer_argument_error


# ------------------------------------------------------------------------------------------------
# nanobind's conversions of scalar and sequence arguments (what MLX's bindings accept before the
# op runs). Each returns None where nanobind refuses, for the caller to raise argument_error.


def to_int(v: Any) -> int | None:
    """nanobind's ``int``: a Python int (a bool too) or anything with ``__index__`` (numpy
    integers, 0-d integer arrays, integer mx.array scalars); not a float."""
    if type(v) is int:
        return v
    if isinstance(v, (tuple, list, float, str, bytes)):  # the common non-ints, no exception
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def to_int_list(v: Any) -> list[int] | None:
    """nanobind's ``Sequence[int]`` / ``tuple[int, ...]``: any sequence but a string (list,
    tuple, range, numpy or mx array) of nanobind ints."""
    if not isinstance(v, (list, tuple)):
        t = type(v)
        if isinstance(v, (str, bytes, dict)) or not (hasattr(t, "__len__")
                                                      and hasattr(t, "__getitem__")):
            return None
        try:
            v = list(v)
        except Exception:  # noqa: BLE001 - not a sequence after all (e.g. a 0-d array)
            return None
    out = []
    for x in v:
        i = to_int(x)
        if i is None:
            return None
        out.append(i)
    return out


def to_float(v: Any) -> float | None:
    """nanobind's ``float``: anything ``float()`` takes (ints and bools, numpy scalars and 0-d
    arrays, mx.array scalars, objects with ``__float__`` / ``__index__``) but a string or a
    numpy array with dimensions."""
    if type(v) is float:
        return v
    if isinstance(v, (str, bytes)) or (isinstance(v, np.ndarray) and v.ndim):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None
