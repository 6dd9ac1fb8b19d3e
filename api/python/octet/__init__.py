"""Python interface to Octet over its C ABI (ctypes + NumPy).

    import numpy as np, octet
    with octet.Context("reference", profile="hopper-like") as ctx:
        x = ctx.quantize(np.random.randn(64, 32), octet.E4M3)   # scale = 448 / amax(x)
        w = ctx.quantize(np.random.randn(16, 32), octet.E4M3)
        y = ctx.gemm(x, w).numpy()          # y = x w^T, FP32, scales applied

NumPy conventions (docs/python.md): host data is anything numpy.asarray
takes (float64 and lists rounded to float32); BF16/FP8/E8M0 tensors come out
of Tensor.numpy() as ml_dtypes arrays when ml_dtypes is installed (raw codes
otherwise; Tensor.codes() always); numpy.asarray(tensor) works; layers start
initialised as torch.nn.Linear's (seed=); quantize's scale defaults to
fp8_max / amax and saturation raises octet.SaturationWarning.

Beyond tensors and GEMMs (docs/python.md):
  - recipes (octet.recipes): DelayedScaling, CurrentScaling, StaticScaling,
    MXFP8Scaling, BlockScaling, RowwiseScaling, MXFP4Scaling, NVFP4Scaling;
  - quantizers (octet.quantizers): Quantizer(recipe, role);
  - autocast scopes and the communicator (octet.autocast):
    `with ctx.autocast(recipe):`, ctx.set_communicator(fn);
  - layers (octet.layers): Linear, LayerNormLinear, LayerNormMLP,
    GroupedLinear; routing tokens to experts (octet.moe).

DLPack (docs/python.md): np.from_dlpack(t) / torch.from_dlpack(t) share an
octet Tensor's memory, octet.from_dlpack(x) / ctx.from_dlpack(x) share a
NumPy array's or torch tensor's; nothing is copied.

Every failure of the library raises OctetError with the library's status and
message; bad Python arguments raise TypeError/ValueError before any C call.
Tensors belong to their context; closing the context early is safe (the
library keeps what tensors need alive).
"""

from ._core import (AMAX, BF16, BOTH, COLUMNWISE, COLUMNWISE_DATA, COLUMNWISE_SCALE_INV, DATA, E2M1, E4M3,
                    E4M3FNUZ, E5M2, E5M2FNUZ, E8M0, FP16, FP32, ROWWISE, ROWWISE_SCALE_INV, SCALE, SCALE_INV, SCALING_BLOCK_1X128,
                    SCALING_BLOCK_128X128, SCALING_MXFP4_1X32, SCALING_MXFP8_1X32, SCALING_NVFP4_16X16,
                    SCALING_NVFP4_1X16, SCALING_PER_COLUMN, SCALING_PER_ROW,
                    SCALING_PER_TENSOR, Context, OctetError,
                    SaturationWarning, Tensor, abi_version, aligned_empty, backend_failures, backends, fp8_decode,
                    fp8_encode, from_codes, from_dlpack, library_version)
from .recipes import (AMAX_CALLBACK, AMAX_MAX, AMAX_MOST_RECENT, FORMAT_E4M3, FORMAT_E4M3FNUZ, FORMAT_E5M2,
                      FORMAT_E5M2FNUZ, FORMAT_HYBRID, FORMAT_HYBRID_FNUZ,
                      MX_ROUND_FLOOR, MX_ROUND_RCEIL, ROLE_GRADIENT, ROLE_INPUT, ROLE_WEIGHT, BlockScaling,
                      CurrentScaling, DelayedScaling, MXFP4Scaling, MXFP8Scaling, NVFP4Scaling, Recipe, RowwiseScaling,
                      StaticScaling)
from .quantizers import Quantizer, QuantizerInfo
from . import fp8_checkpoints  # noqa: F401  (octet.fp8_checkpoints: FP8 safetensors checkpoints)
from .autocast import Autocast, autocast, autocast_state, set_communicator
from .layers import (ACTIVATION_GELU, ACTIVATION_SWIGLU, NORM_LAYERNORM, NORM_RMSNORM, WEIGHTS_FP8_ONLY,
                     WEIGHTS_HIGH_PRECISION, GroupedLinear, Layer, LayerNormLinear, LayerNormMLP, Linear,
                     Saved)
from . import moe  # noqa: F401  (octet.moe: tokens sorted by expert, and back)

# The loaded liboctet's version (octet_library_version), as "major.minor.patch".
__version__ = "{}.{}.{}".format(*library_version())


def __getattr__(name):
    """octet.torch (torch.nn.Modules over the layers) is imported on first
    use, so that importing octet never imports torch."""
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'octet' has no attribute {name!r}")
