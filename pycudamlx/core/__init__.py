"""``import pycudamlx.core as mx``: MLX's ``mlx.core`` API on NVIDIA GPUs and the CPU."""

from __future__ import annotations

from .. import MLX_API_VERSION as __version__  # MLX's API version (mx.__version__), not ours
from .. import _env

_env.check()  # a bad PYCUDAMLX_* / MLX_* value: one ConfigError naming it, before anything runs
from ..dtypes import (  # noqa: F401
    Dtype, DtypeCategory, bfloat16, bool_, can_cast, complex64, complexfloating, finfo,
    float16, float32, float64, floating, generic, iinfo, inexact, int8, int16, int32, int64,
    integer, isdtype, issubdtype, number, result_type, signedinteger, uint8, uint16, uint32,
    uint64, unsignedinteger,
)
from ._base import AxisError  # noqa: F401
from .array import array  # noqa: F401
from .device import (  # noqa: F401
    Device, DeviceType, Stream, StreamContext, cpu, default_device, default_stream,
    device_count, device_info, gpu, is_available, new_stream, set_default_device,
    set_default_stream, stream, synchronize,
)
from .evaluation import async_eval, eval  # noqa: F401

# Op families: each module lists its public functions in __all__.
from .elementwise import *  # noqa: F401,F403,E402
from .creation import *  # noqa: F401,F403,E402
from .device import *  # noqa: F401,F403,E402
from .array import *  # noqa: F401,F403,E402
from .printing import *  # noqa: F401,F403,E402
from .interop import *  # noqa: F401,F403,E402
from .array_api_info import *  # noqa: F401,F403,E402
from .memory import *  # noqa: F401,F403,E402
from . import cuda, metal  # noqa: F401,E402
from . import fast  # noqa: F401,E402
from .shape import *  # noqa: F401,F403,E402
from .indexing import *  # noqa: F401,F403,E402
from .matmul import *  # noqa: F401,F403,E402
from . import random  # noqa: F401,E402
from .sorting import *  # noqa: F401,F403,E402
from .reduce import *  # noqa: F401,F403,E402
from .transforms import *  # noqa: F401,F403,E402
from .autodiff import *  # noqa: F401,F403,E402
from . import fft, linalg  # noqa: F401,E402
from . import distributed  # noqa: F401,E402
from .linalg import norm as matrix_norm  # noqa: F401,E402
from .misc import *  # noqa: F401,F403,E402
from .io import *  # noqa: F401,F403,E402
from .conv import *  # noqa: F401,F403,E402
from .quantize import *  # noqa: F401,F403,E402
from .masked_matmul import *  # noqa: F401,F403,E402
from .hadamard import *  # noqa: F401,F403,E402
from .fp8 import *  # noqa: F401,F403,E402
from ..transforms.vmap import vmap  # noqa: F401,E402
from .export import *  # noqa: F401,F403,E402
from .graph_dot import *  # noqa: F401,F403,E402


class NotYetImplemented(AttributeError):
    """An mlx.core name pycudamlx does not provide yet. An AttributeError, so ``hasattr`` and
    feature checks behave as for any missing name, with a message that says what it is."""


#: mlx.core names not provided yet, by area (the message names the area).
_NOT_YET: dict[str, tuple[str, ...]] = {}
_NOT_YET_AREA = {name: area for area, names in _NOT_YET.items() for name in names}


def __getattr__(name: str):
    area = _NOT_YET_AREA.get(name)
    if area is not None:
        raise NotYetImplemented(f"mx.{name} is not implemented in pycudamlx yet ({area}); "
                                "see the project's README for what is")
    raise AttributeError(f"module 'mlx.core' has no attribute {name!r}")  # MLX's text
