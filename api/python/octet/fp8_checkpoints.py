"""Fine-grained FP8 checkpoints: the safetensors layout of open FP8 LLM
checkpoints into an octet layer's FP8-only weights, and back
(docs/python.md, "Fine-grained FP8 checkpoints").

The layout: each FP8 weight `<name>` is float8_e4m3fn [out, in] with
`<name>_scale_inv`, a float32 grid [ceil(out/128), ceil(in/128)];
dequantized = codes * scale_inv, one scale_inv per 128 x 128 block (the
last blocks ragged). A per-channel checkpoint has one scale_inv per output
row instead, [out, 1] (or [out]). The layer is made with
weight_storage="fp8_only" and a recipe whose weight role stores those
blocks: octet.BlockScaling() (128 x 128 weights, SCALING_BLOCK_128X128) or
octet.RowwiseScaling() (per-row weights, SCALING_PER_ROW). Loading writes
the codes and the grid into the stored weight as they are (no
dequantize-quantize round, so saving gives them back bit for bit); other
parameters (biases, norms) are float tensors set with set_parameter.

NumPy only (ml_dtypes for float8 arrays when it is installed): the
safetensors file format (an 8-byte little-endian header length, a JSON
header of dtype / shape / data_offsets per tensor, the raw little-endian
bytes) is read and written here, since safetensors.numpy has no float8."""

import json as _json
import os as _os

import numpy as _np

from . import _codes, _dtypes
from ._dtypes import AMAX, DATA, E4M3, E5M2, ROWWISE_SCALE_INV, SCALING_BLOCK_128X128, SCALING_PER_ROW, _ML
from ._errors import _check
from ._lib import lib as _libc

# safetensors dtype names -> (NumPy storage type, Octet dtype of raw codes or None).
_ST_TYPES = {"F32": (_np.float32, None), "F16": (_np.float16, None), "F64": (_np.float64, None),
             "BF16": (_np.uint16, _dtypes.BF16), "F8_E4M3": (_np.uint8, E4M3), "F8_E5M2": (_np.uint8, E5M2),
             "U8": (_np.uint8, None), "I8": (_np.int8, None), "I32": (_np.int32, None), "I64": (_np.int64, None)}
_FLOAT_NAMES = {_np.dtype(_np.float32): "F32", _np.dtype(_np.float16): "F16", _np.dtype(_np.float64): "F64",
                _np.dtype(_np.uint8): "U8", _np.dtype(_np.int8): "I8", _np.dtype(_np.int32): "I32",
                _np.dtype(_np.int64): "I64"}
_ML_ST_NAMES = {_dtypes.BF16: "BF16", E4M3: "F8_E4M3", E5M2: "F8_E5M2"}
_MODES = {SCALING_BLOCK_128X128: "128 x 128 blocks (octet.BlockScaling())",
          SCALING_PER_ROW: "one scale per output row (octet.RowwiseScaling())"}


def read_safetensors(path):
    """{name: NumPy array} of a .safetensors file (a copy of each tensor).
    F8_E4M3 / F8_E5M2 / BF16 tensors come as ml_dtypes float8_e4m3fn /
    float8_e5m2 / bfloat16 arrays when ml_dtypes is installed, else as their
    raw uint8 / uint16 codes; F32, F16, F64 and integer tensors as such."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
    size = int.from_bytes(blob[:8], "little")
    if size > len(blob) - 8:
        raise ValueError(f"{path}: header length {size} runs past the end of the file ({len(blob)} bytes)")
    try:
        header = _json.loads(blob[8:8 + size].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"{path}: the safetensors header is not JSON: {e}") from None
    data = memoryview(blob)[8 + size:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        kind = entry.get("dtype")
        if kind not in _ST_TYPES:
            raise ValueError(f"{path}: tensor {name!r} has dtype {kind!r}, which this reader does not take "
                             f"({', '.join(_ST_TYPES)})")
        storage, coded = _ST_TYPES[kind]
        shape = tuple(int(n) for n in entry["shape"])
        begin, end = (int(n) for n in entry["data_offsets"])
        expected = int(_np.prod(shape, dtype=_np.int64)) * _np.dtype(storage).itemsize
        if not 0 <= begin <= end <= len(data) or end - begin != expected:
            raise ValueError(f"{path}: tensor {name!r} ({kind} {list(shape)}) has data_offsets {[begin, end]}, "
                             f"which do not hold its {expected} bytes within the {len(data)}-byte buffer")
        array = _np.frombuffer(data[begin:end], dtype=_np.dtype(storage).newbyteorder("<")).astype(storage)
        array = array.reshape(shape)
        typed = _ML.get(coded) if coded is not None else None
        tensors[name] = array.view(typed) if typed is not None else array
    return tensors


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: NumPy array} as a .safetensors file. ml_dtypes
    float8_e4m3fn / float8_e5m2 / bfloat16 arrays are stored as F8_E4M3 /
    F8_E5M2 / BF16; float32, float16, float64, uint8, int8, int32, int64 as
    themselves. metadata: an optional {str: str} (the header's
    __metadata__)."""
    header, offset, chunks = {}, 0, []
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in dict(metadata).items()):
            raise TypeError("metadata must map str to str (safetensors' __metadata__)")
        header["__metadata__"] = dict(metadata)
    for name in sorted(tensors):
        array = _np.ascontiguousarray(tensors[name])
        if not isinstance(name, str) or name == "__metadata__":
            raise ValueError(f"tensor names must be strings other than '__metadata__'; got {name!r}")
        coded = _dtypes._FROM_ML.get(array.dtype)
        if coded in _ML_ST_NAMES:
            kind, raw = _ML_ST_NAMES[coded], array.view(_np.uint16 if coded == _dtypes.BF16 else _np.uint8)
        elif array.dtype.newbyteorder("=") in _FLOAT_NAMES:
            kind, raw = _FLOAT_NAMES[array.dtype.newbyteorder("=")], array
        else:
            raise TypeError(f"tensor {name!r} is {array.dtype}, which safetensors files here do not take")
        raw = raw.astype(raw.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": kind, "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = _json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the buffer starts 8-byte aligned
    temporary = f"{path}.tmp{_os.getpid()}"
    with open(temporary, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for chunk in chunks:
            f.write(chunk)
    _os.replace(temporary, path)


def _fp8_weight(layer, name):
    weight = layer.parameter(name)
    if not weight.usages or weight.dtype not in (E4M3, E5M2):
        raise ValueError(f"parameter {name!r} of the layer is not an FP8 weight: make the layer with "
                         "weight_storage=\"fp8_only\" and recipe=octet.BlockScaling() (128 x 128 blocks) or "
                         "octet.RowwiseScaling() (per row)")
    if weight.scaling_mode not in _MODES:
        raise ValueError(f"parameter {name!r} is stored with {_codes._mode_name(weight.scaling_mode)}, and FP8 "
                         "checkpoints hold 128 x 128 blocks or per-row scales: make the layer with "
                         "recipe=octet.BlockScaling() or octet.RowwiseScaling()")
    return weight


def load_fp8_weight(layer, name, codes, scale_inv):
    """Writes FP8 codes [out, in] (uint8, or an ml_dtypes float8 array of the
    weight's format) and their scale_inv into the layer's FP8-only weight
    `name`, as they are: [ceil(out/128), ceil(in/128)] for a 128 x 128
    block weight, [out, 1] (or [out]) for a per-row one; each finite and >
    0 (float64 rounded to float32). Dequantized = codes * scale_inv."""
    weight = _fp8_weight(layer, name)
    codes, _ = _codes.codes_array(codes, weight.dtype, f"codes of {name!r}")
    if codes.shape != weight.shape:
        raise ValueError(f"codes of {name!r} must have the weight's shape {weight.shape}; got {codes.shape}")
    rows, cols = _codes.matrix_shape(weight.shape)
    grid = _codes.scale_grid(scale_inv, weight.scaling_mode, rows, cols, f"scale_inv of {name!r}")
    info = weight.info()
    if info["has_columnwise_data"] or info["columnwise_scale_inv_bytes"]:
        raise ValueError(f"parameter {name!r} has a columnwise copy, which an FP8 checkpoint does not hold")
    for component, array in ((DATA, codes), (ROWWISE_SCALE_INV, grid)):
        _check(_libc.octet_tensor_copy_from_host(weight.handle, component, array.ctypes.data, array.nbytes))
    ctx = layer.context
    amax = _np.array(ctx.amax(ctx.dequantize(weight)), dtype=_np.float32)
    _check(_libc.octet_tensor_copy_from_host(weight.handle, AMAX, amax.ctypes.data, 4))


def fp8_weight(layer, name):
    """(codes, scale_inv) of the layer's FP8-only weight `name`: codes
    [out, in] as an ml_dtypes float8 array (raw uint8 without ml_dtypes),
    scale_inv the float32 grid ([ceil(out/128), ceil(in/128)] or [out, 1])."""
    weight = _fp8_weight(layer, name)
    codes = weight.codes(DATA)
    typed = _ML.get(weight.dtype)
    return (codes.view(typed) if typed is not None else codes), weight.component(ROWWISE_SCALE_INV)


def load_safetensors(layer, source, prefix="", scale_suffix="_scale_inv"):
    """Loads a layer's parameters from a safetensors file (a path) or a
    {name: array} dict: FP8-only weights from `<prefix><name>` (FP8 codes)
    and `<prefix><name><scale_suffix>` (their scale_inv grid), other
    parameters (bias, norm weights) from float arrays `<prefix><name>`.
    scale_suffix: "_scale_inv" as the fine-grained layout names it; pass
    "_scale" for checkpoints whose per-channel `weight_scale` is the
    multiplier too (dequantized = codes * weight_scale). Every parameter
    must be there; names the layer lacks are ignored. Returns the keys
    read."""
    tensors = read_safetensors(source) if isinstance(source, (str, _os.PathLike)) else dict(source)
    used = []
    for name in layer.parameter_names:
        key = prefix + name
        if key not in tensors:
            raise KeyError(f"{key!r} is not in the checkpoint (the layer's parameter {name!r}); it has "
                           f"{', '.join(sorted(tensors)[:12])}{' ...' if len(tensors) > 12 else ''}")
        parameter = layer.parameter(name)
        if parameter.usages:
            scale_key = key + scale_suffix
            if scale_key not in tensors:
                raise KeyError(f"{scale_key!r} (the scale_inv grid of {key!r}) is not in the checkpoint")
            load_fp8_weight(layer, name, tensors[key], tensors[scale_key])
            used += [key, scale_key]
        else:
            values = _np.asarray(tensors[key])
            if values.dtype.kind not in "f" and values.dtype not in _dtypes._FROM_ML:
                raise TypeError(f"{key!r} is {values.dtype}: parameter {name!r} takes float values")
            if values.dtype in _dtypes._FROM_ML:
                values = values.astype(_np.float32)
            if values.shape != parameter.shape:
                raise ValueError(f"{key!r} has shape {values.shape}; parameter {name!r} is {parameter.shape}")
            layer.set_parameter(name, values)
            used.append(key)
    return used


def save_safetensors(layer, path, prefix="", scale_suffix="_scale_inv", metadata=None):
    """Saves a layer's parameters in the layout load_safetensors reads:
    FP8-only weights as their codes (F8_E4M3 / F8_E5M2) and scale_inv grid
    (F32) exactly as stored, other parameters as float32."""
    tensors = {}
    for name in layer.parameter_names:
        if layer.parameter(name).usages:
            codes, grid = fp8_weight(layer, name)
            if codes.dtype == _np.uint8:
                raise RuntimeError("saving FP8 weights needs ml_dtypes (for the float8 array types)")
            tensors[prefix + name], tensors[prefix + name + scale_suffix] = codes, grid
        else:
            tensors[prefix + name] = layer.get_parameter(name)
    write_safetensors(path, tensors, metadata)
    return sorted(tensors)
