"""Every layer class and activation function of ``mlx.nn``."""

from .activations import *  # noqa: F401,F403
from .base import Module  # noqa: F401
from .containers import Sequential  # noqa: F401
from .convolution import (  # noqa: F401
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,
)
from .distributed import (  # noqa: F401
    AllToShardedLinear, FullyShardedModule, QuantizedAllToShardedLinear,
    QuantizedShardedToAllLinear, ShardedToAllLinear, fully_shard,
)
from .dropout import Dropout, Dropout2d, Dropout3d  # noqa: F401
from .embedding import Embedding  # noqa: F401
from .linear import Bilinear, Identity, Linear  # noqa: F401
from .normalization import BatchNorm, GroupNorm, InstanceNorm, LayerNorm, RMSNorm  # noqa: F401
from .pooling import (  # noqa: F401
    AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d,
)
from .positional_encoding import ALiBi, RoPE, SinusoidalPositionalEncoding  # noqa: F401
from .quantized import QQLinear, QuantizedEmbedding, QuantizedLinear, quantize  # noqa: F401
from .recurrent import GRU, LSTM, RNN  # noqa: F401
from .upsample import Upsample  # noqa: F401
from .transformer import (  # noqa: F401
    MultiHeadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,
    TransformerEncoder, TransformerEncoderLayer,
)
