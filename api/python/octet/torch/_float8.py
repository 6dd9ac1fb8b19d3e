"""torch float8 tensors and octet quantized tensors: from_float8 (codes +
scale_inv, the Transformer Engine `_data` / `_scale_inv` and torchao
convention dequantized = codes * scale_inv) and to_float8, the way back
(docs/pytorch.md, "torch float8 tensors")."""

import torch

from .. import _codes
from .._dtypes import _dtype_code, _lib_dtype_name
from .._core import (COLUMNWISE_DATA, COLUMNWISE_SCALE_INV, DATA, E2M1, E4M3, E4M3FNUZ, E5M2, E5M2FNUZ,
                     ROWWISE_SCALE_INV, SCALE_INV, SCALING_PER_TENSOR, Context, OctetError, Tensor)
from ._defaults import default_context

_FROM_TORCH = {torch.float8_e4m3fn: E4M3, torch.float8_e5m2: E5M2, torch.float8_e4m3fnuz: E4M3FNUZ,
               torch.float8_e5m2fnuz: E5M2FNUZ}
_CODE_TYPES = tuple(t for t in (getattr(torch, "float8_e8m0fnu", None), torch.float8_e4m3fn) if t is not None)


def _context(context):
    if context is None:
        return default_context()
    if not isinstance(context, Context):
        raise TypeError(f"context must be an octet.Context or None; got {type(context).__name__}")
    return context


def _host(t, what):
    """A torch tensor's elements as a NumPy array on the host (its codes for
    float8 types: uint8). A copy only where the tensor is not already a
    contiguous CPU tensor."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    if t.dtype in _FROM_TORCH or t.dtype in _CODE_TYPES:
        return t.view(torch.uint8).numpy()
    if t.dtype == torch.bfloat16:
        return t.float().numpy()  # exact
    if t.dtype.is_complex or t.dtype == torch.bool:
        raise TypeError(f"{what} must hold real numbers; got {t.dtype}")
    return t.numpy()


def from_float8(t, scale_inv=None, *, context=None, scaling_mode=None, dtype=None, columnwise=None,
                columnwise_scale_inv=None, tensor_scale=None, amax=None, usages=None):
    """An octet Tensor from a torch float8 tensor and its scale_inv.

    t: torch.float8_e4m3fn / float8_e5m2 / float8_e4m3fnuz / float8_e5m2fnuz
    codes (a uint8 tensor of raw codes, as Transformer Engine's
    Float8Tensor._data, with dtype=octet.E4M3 / E5M2 / ...).
    scale_inv: dequantized = codes * scale_inv. A number or one-element
    tensor for per-tensor scaling (Float8Tensor._scale_inv, torchao's
    tensorwise scale), or a grid with scaling_mode (octet.SCALING_PER_ROW
    [rows, 1] as torchao's rowwise scales, SCALING_BLOCK_128X128
    [ceil(rows/128), ceil(cols/128)], SCALING_MXFP8_1X32 as
    torch.float8_e8m0fnu codes, ...: the grids ctx.from_codes takes).
    None: a plain FP8 tensor of the codes.

    Zero-copy only for a plain tensor (scale_inv=None) whose memory
    octet.from_dlpack accepts (contiguous, aligned for the backend, on a
    device the context addresses); otherwise the codes are copied: a
    quantized octet tensor owns its components. columnwise /
    columnwise_scale_inv / tensor_scale / amax / usages: as
    ctx.from_codes's columnwise_codes, columnwise_scale_inv, tensor_scale,
    amax, usages."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"t must be a torch tensor of float8 codes; got {type(t).__name__}")
    ctx = _context(context)
    if t.dtype in _FROM_TORCH:
        code_dtype = _FROM_TORCH[t.dtype]
        if dtype is not None and _dtype_code(dtype) != code_dtype:
            raise ValueError(f"t is {t.dtype} but dtype= asks for {_lib_dtype_name(_dtype_code(dtype))}:"
                             " leave dtype out")
    elif t.dtype == torch.uint8:
        if dtype is None:
            raise TypeError("t holds uint8 raw codes: pass dtype=octet.E4M3, E5M2, E4M3FNUZ or E5M2FNUZ")
        code_dtype = _dtype_code(dtype)
        if code_dtype not in _codes.FP8_DTYPES:
            raise ValueError(f"dtype must be an FP8 format (octet.E4M3, E5M2, E4M3FNUZ, E5M2FNUZ); got "
                             f"{_lib_dtype_name(code_dtype)}")
    else:
        raise TypeError(f"t must be a torch float8 tensor (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, "
                        f"float8_e5m2fnuz) or uint8 codes with dtype=; got {t.dtype} (octet.torch takes float "
                        "tensors through ctx.quantize)")
    if scale_inv is None and scaling_mode is None and all(
            v is None for v in (columnwise, columnwise_scale_inv, tensor_scale, amax, usages)):
        if t.dtype in _FROM_TORCH:
            try:
                return ctx.from_dlpack(t.detach())
            except (OctetError, BufferError, ValueError, TypeError):
                pass  # a layout DLPack import refuses: copied below
        return ctx.from_codes(_host(t, "t"), code_dtype)
    if scale_inv is None:
        raise ValueError("scale_inv is needed with scaling_mode (dequantized = codes * scale_inv)")
    scale = scale_inv
    if isinstance(scale_inv, torch.Tensor):
        scale = _host(scale_inv, "scale_inv")
        if scaling_mode is None and scale_inv.numel() != 1:
            raise ValueError(f"scale_inv has shape {tuple(scale_inv.shape)}: pass scaling_mode= for a grid "
                             "(octet.SCALING_PER_ROW, SCALING_PER_COLUMN, SCALING_BLOCK_1X128, SCALING_BLOCK_128X128, "
                             "SCALING_MXFP8_1X32); a one-element scale_inv is per-tensor")
    if scaling_mode is None:
        scaling_mode = SCALING_PER_TENSOR
    columnwise_codes = None if columnwise is None else _host(columnwise, "columnwise")
    if columnwise is not None and columnwise.dtype not in (t.dtype, torch.uint8):
        raise TypeError(f"columnwise is {columnwise.dtype}; t is {t.dtype}")
    if isinstance(columnwise_scale_inv, torch.Tensor):
        columnwise_scale_inv = _host(columnwise_scale_inv, "columnwise_scale_inv")
    if isinstance(tensor_scale, torch.Tensor):
        tensor_scale = _host(tensor_scale, "tensor_scale")
    if isinstance(amax, torch.Tensor):
        amax = _host(amax, "amax")
    return ctx.from_codes(_host(t, "t"), code_dtype, scaling_mode=scaling_mode, scale_inv=scale,
                          columnwise_codes=columnwise_codes, columnwise_scale_inv=columnwise_scale_inv,
                          tensor_scale=tensor_scale, amax=amax, usages=usages)


def to_float8(q, *, columnwise=False):
    """(codes, scale_inv) of an octet FP8 tensor as torch tensors, with
    dequantized = codes.float() * scale_inv per block.

    codes: a torch float8 tensor of the tensor's format over the octet
    tensor's memory (zero-copy through DLPack; it stays valid after
    q.close()), [rows, cols] as stored, or the columnwise copy [cols, rows]
    with columnwise=True. scale_inv: per-tensor a float32 tensor of shape
    [1] (a copy, so that no write through it can part SCALE_INV from
    SCALE); a block-scaled tensor's grid zero-copy (float32, or
    torch.float8_e8m0fnu codes for MXFP8); None for a plain FP8 tensor.
    FP4 (E2M1) tensors have no torch float8 form: q.parts() gives their
    codes and scales."""
    if not isinstance(q, Tensor):
        raise TypeError(f"q must be an octet Tensor; got {type(q).__name__}")
    if q.dtype == E2M1:
        raise ValueError("to_float8 takes FP8 tensors; an E2M1 (FP4) tensor's codes and scales come from q.parts()")
    if q.dtype not in _codes.FP8_DTYPES:
        raise ValueError(f"to_float8 takes FP8 tensors (E4M3, E5M2, E4M3FNUZ, E5M2FNUZ); q is "
                         f"{_lib_dtype_name(q.dtype)}")
    if not q.usages:
        if columnwise:
            raise ValueError("columnwise=True needs a quantized tensor with the columnwise usage; q is plain")
        return torch.from_dlpack(q), None
    info = q.info()
    if columnwise and not info["has_columnwise_data"]:
        raise ValueError("q has no columnwise copy (COLUMNWISE_DATA): quantize it with usages=octet.BOTH, or read "
                         "the rowwise codes transposed where the mode allows")
    if not columnwise and not info["has_rowwise_data"]:
        raise ValueError("q has no rowwise copy (it was quantized for the columnwise usage only): columnwise=True")
    codes = torch.from_dlpack(q.dlpack_component(COLUMNWISE_DATA if columnwise else DATA))
    if q.scaling_mode == SCALING_PER_TENSOR:
        scale_inv = torch.from_dlpack(q.dlpack_component(SCALE_INV)).clone()
    else:
        scale_inv = torch.from_dlpack(q.dlpack_component(COLUMNWISE_SCALE_INV if columnwise else ROWWISE_SCALE_INV))
    return codes, scale_inv
