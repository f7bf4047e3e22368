"""pycudamlx: code written for Apple's MLX, run on NVIDIA GPUs (or on the CPU through numpy).

Use it as ``import pycudamlx.core as mx``. Importing never touches the CUDA driver: the driver is
initialised on the first GPU use.
"""

__version__ = "0.1.0"

#: The MLX API version pycudamlx implements: ``mlx.core.__version__`` under ``pycudamlx run``
#: (and ``pycudamlx.core.__version__``, since MLX code reads ``mx.__version__``).
MLX_API_VERSION = "0.32.4"
