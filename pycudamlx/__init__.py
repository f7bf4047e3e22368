"""pycudamlx: code written for Apple's MLX, run on NVIDIA GPUs (or on the CPU through numpy).

Use it as ``import pycudamlx.core as mx``. Importing never touches the CUDA driver: the driver is
initialised on the first GPU use.
"""

__version__ = "0.1.0"
