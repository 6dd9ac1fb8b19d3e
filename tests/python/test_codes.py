"""Quantized tensors from codes and scales, and back (ctx.from_codes,
Tensor.scales / parts), and FP8 checkpoints in the fine-grained
safetensors layout (octet.fp8_checkpoints).

Expectations are computed here, independently of the library: codes are
decoded by the formats' formulas (sign, exponent, mantissa, special codes;
numerics.md sections 1 and 5), the scale grids expanded block by block as
numerics.md sections 11, 15 and 16 define them, and the checkpoint files
written and read by a safetensors encoder in this file (struct + json)."""

import json
import math
import struct

import numpy as np
import pytest

import octet
from octet import fp8_checkpoints

from _oracle import backend_params

BACKENDS = backend_params()
F32 = np.float32

# (exponent bits, mantissa bits, bias, kind) of each code format.
FORMATS = {octet.E4M3: (4, 3, 7, "fn"), octet.E5M2: (5, 2, 15, "ieee"), octet.E4M3FNUZ: (4, 3, 8, "fnuz"),
           octet.E5M2FNUZ: (5, 2, 16, "fnuz"), octet.E2M1: (2, 1, 1, "none")}


def decode_one(code, dtype):
    e_bits, m_bits, bias, kind = FORMATS[dtype]
    width = 1 + e_bits + m_bits
    sign = -1.0 if code >> (width - 1) & 1 else 1.0
    exponent = (code >> m_bits) & ((1 << e_bits) - 1)
    mantissa = code & ((1 << m_bits) - 1)
    if kind == "fn" and code & 0x7F == 0x7F:
        return math.nan
    if kind == "ieee" and exponent == (1 << e_bits) - 1:
        return sign * math.inf if mantissa == 0 else math.nan
    if kind == "fnuz" and code == 0x80:
        return math.nan
    if exponent == 0:
        return sign * math.ldexp(mantissa, 1 - bias - m_bits)
    return sign * math.ldexp((1 << m_bits) + mantissa, exponent - bias - m_bits)


def decode(codes, dtype):
    count = 16 if dtype == octet.E2M1 else 256
    table = np.array([decode_one(c, dtype) for c in range(count)], dtype=np.float64)
    return table[np.asarray(codes)].astype(F32)


def e8m0(codes):
    codes = np.asarray(codes, dtype=np.int64)
    return np.where(codes == 0xFF, np.nan, np.ldexp(1.0, codes - 127)).astype(F32)


def expand(grid, rows, cols, block_rows, block_cols):
    """A grid of one scale per block -> one per element of [rows, cols]."""
    return np.repeat(np.repeat(grid, block_rows, axis=0), block_cols, axis=1)[:rows, :cols]


def assert_same(got, expected):
    got, expected = np.asarray(got, F32), np.asarray(expected, F32)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    finite = ~np.isnan(expected)
    np.testing.assert_array_equal(got[finite], expected[finite])
    np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(expected[finite]))


@pytest.fixture(params=BACKENDS)
def ctx(request):
    with octet.Context(request.param) as c:
        yield c


def fp8_codes(rng, shape, dtype, nan=False):
    codes = rng.integers(0, 256, shape, dtype=np.uint8)
    if not nan:  # finite codes only, so that every expected value is a number
        finite = np.isfinite(decode(np.arange(256), dtype))
        codes = np.where(finite[codes], codes, 0x21).astype(np.uint8)
    return codes


ROWS, COLS = 130, 300  # ragged against 16, 32 and 128


# -- every scaling mode: codes + scales in, dequantize against the model ----------------

@pytest.mark.parametrize("dtype", [octet.E4M3, octet.E5M2, octet.E4M3FNUZ, octet.E5M2FNUZ])
def test_per_tensor_every_code(ctx, dtype):
    if not ctx.info()["dtypes"] & (1 << dtype):
        pytest.skip(f"the backend does not store {dtype}")
    codes = np.arange(256, dtype=np.uint8).reshape(8, 32)
    q = ctx.from_codes(codes, dtype, scale_inv=0.375)
    assert q.scaling_mode == octet.SCALING_PER_TENSOR
    assert_same(q.values(), decode(codes, dtype) * F32(0.375))
    assert q.scales()["scale_inv"] == 0.375
    assert q.component(octet.SCALE) == F32(1) / F32(0.375)  # the pair: dequantize never sees a stale half
    np.testing.assert_array_equal(q.codes(), codes)
    # a quantizer's SCALE, written as such: SCALE_INV is its FP32 reciprocal
    s = ctx.from_codes(codes, dtype, scale=F32(3.0))
    assert (s.component(octet.SCALE), s.component(octet.SCALE_INV)) == (3.0, F32(1) / F32(3))


@pytest.mark.parametrize("mode,block", [
    (octet.SCALING_PER_ROW, (1, COLS)), (octet.SCALING_PER_COLUMN, (ROWS, 1)),
    (octet.SCALING_BLOCK_1X128, (1, 128)), (octet.SCALING_BLOCK_128X128, (128, 128))])
def test_fp32_grids(ctx, mode, block):
    rng = np.random.default_rng(mode)
    codes = fp8_codes(rng, (ROWS, COLS), octet.E4M3, nan=True)
    grid_shape = (math.ceil(ROWS / block[0]), math.ceil(COLS / block[1]))
    grid = (rng.uniform(0.5, 2.0, grid_shape) * 2.0 ** rng.integers(-20, 4, grid_shape)).astype(F32)
    q = ctx.from_codes(codes, octet.E4M3, scaling_mode=mode, scale_inv=grid)
    assert_same(q.values(), decode(codes, octet.E4M3) * expand(grid, ROWS, COLS, *block))
    np.testing.assert_array_equal(q.scales()["scale_inv"], grid)
    np.testing.assert_array_equal(q.codes(), codes)


def test_mxfp8_e8m0_grid(ctx):
    rng = np.random.default_rng(3)
    codes = fp8_codes(rng, (ROWS, COLS), octet.E5M2, nan=True)
    grid = rng.integers(110, 140, (ROWS, math.ceil(COLS / 32)), dtype=np.uint8)
    grid[0, 0] = 0xFF  # the NaN code: its whole block NaN (numerics.md 11)
    q = ctx.from_codes(codes, octet.E5M2, scaling_mode=octet.SCALING_MXFP8_1X32, scale_inv=grid)
    assert_same(q.values(), decode(codes, octet.E5M2) * expand(e8m0(grid), ROWS, COLS, 1, 32))
    np.testing.assert_array_equal(q.scales()["scale_inv"], grid)
    # the same scales as float values (powers of two) give the same codes
    finite = grid[1:, :2]
    r = ctx.from_codes(codes[1:, :64], octet.E5M2, scaling_mode=octet.SCALING_MXFP8_1X32,
                       scale_inv=np.ldexp(1.0, finite.astype(int) - 127))
    np.testing.assert_array_equal(r.scales()["scale_inv"], finite)


def _fp4_ctx(ctx):
    if not ctx.info()["dtypes"] & (1 << octet.E2M1):
        pytest.skip("the backend does not store E2M1")


@pytest.mark.parametrize("mode,block", [
    (octet.SCALING_MXFP4_1X32, (1, 32)), (octet.SCALING_NVFP4_1X16, (1, 16)), (octet.SCALING_NVFP4_16X16, (16, 16))])
def test_fp4_grids(ctx, mode, block):
    _fp4_ctx(ctx)
    rng = np.random.default_rng(mode)
    rows, cols = 35, 71  # odd: packed rows padded with a zero nibble
    codes = rng.integers(0, 16, (rows, cols), dtype=np.uint8)
    grid_shape = (math.ceil(rows / block[0]), math.ceil(cols / block[1]))
    if mode == octet.SCALING_MXFP4_1X32:
        grid = rng.integers(120, 135, grid_shape, dtype=np.uint8)
        q = ctx.from_codes(codes, octet.E2M1, scaling_mode=mode, scale_inv=grid)
        scale = e8m0(grid)
    else:
        grid = rng.integers(0x20, 0x7F, grid_shape, dtype=np.uint8)  # positive E4M3 codes, NaN excluded
        g = F32(0.0123)
        q = ctx.from_codes(codes, octet.E2M1, scaling_mode=mode, scale_inv=grid, tensor_scale=g)
        scale = decode(grid, octet.E4M3) * g  # X = decode(s) * g, one FP32 multiply (numerics.md 15.3)
        assert q.scales()["tensor_scale"] == g
    assert_same(q.values(), decode(codes, octet.E2M1) * expand(scale, rows, cols, *block))
    np.testing.assert_array_equal(q.codes(), codes)
    np.testing.assert_array_equal(q.scales()["scale_inv"], grid)


def test_columnwise_copy_derived_where_it_is_the_transpose(ctx):
    rng = np.random.default_rng(5)
    codes = fp8_codes(rng, (ROWS, COLS), octet.E4M3)
    grid = rng.uniform(0.01, 1.0, (2, 3)).astype(F32)
    q = ctx.from_codes(codes, octet.E4M3, scaling_mode=octet.SCALING_BLOCK_128X128, scale_inv=grid, usages=octet.BOTH)
    np.testing.assert_array_equal(q.codes(octet.COLUMNWISE_DATA), codes.T)
    np.testing.assert_array_equal(q.component(octet.COLUMNWISE_SCALE_INV), grid.T)
    column = rng.uniform(0.01, 1.0, (1, COLS)).astype(F32)
    p = ctx.from_codes(codes, octet.E4M3, scaling_mode=octet.SCALING_PER_COLUMN, scale_inv=column,
                       usages=octet.BOTH)
    np.testing.assert_array_equal(p.codes(octet.COLUMNWISE_DATA), codes.T)
    np.testing.assert_array_equal(p.component(octet.COLUMNWISE_SCALE_INV), column.T)


def test_separate_columnwise_copies_are_written(ctx):
    rng = np.random.default_rng(6)
    codes = fp8_codes(rng, (ROWS, COLS), octet.E4M3)
    column_codes = fp8_codes(rng, (COLS, ROWS), octet.E4M3)
    grid = rng.uniform(0.01, 1.0, (ROWS, 3)).astype(F32)
    column_grid = rng.uniform(0.01, 1.0, (COLS, 2)).astype(F32)
    q = ctx.from_codes(codes, octet.E4M3, scaling_mode=octet.SCALING_BLOCK_1X128, scale_inv=grid,
                       columnwise_codes=column_codes, columnwise_scale_inv=column_grid)
    assert q.usages == octet.BOTH
    np.testing.assert_array_equal(q.codes(octet.COLUMNWISE_DATA), column_codes)
    np.testing.assert_array_equal(q.component(octet.COLUMNWISE_SCALE_INV), column_grid)


RECIPES = [(octet.DelayedScaling, "input"), (octet.CurrentScaling, "input"), (octet.BlockScaling, "input"),
           (octet.BlockScaling, "weight"), (octet.MXFP8Scaling, "input"), (octet.RowwiseScaling, "input"),
           (octet.MXFP4Scaling, "input"), (octet.NVFP4Scaling, "input"), (octet.NVFP4Scaling, "weight")]


@pytest.mark.parametrize("recipe,role", RECIPES)
def test_parts_rebuild_a_quantized_tensor_bit_for_bit(ctx, recipe, role):
    r = recipe()
    if recipe in (octet.MXFP4Scaling, octet.NVFP4Scaling):
        _fp4_ctx(ctx)
    x = np.random.default_rng(7).standard_normal((ROWS, COLS)).astype(F32)
    x[3, 5] = np.nan
    q = octet.Quantizer(r, role).quantize(ctx, x)
    rebuilt = ctx.from_codes(**q.parts())
    info, again = q.info(), rebuilt.info()
    assert (again["scaling_mode"], again["usages"]) == (info["scaling_mode"], info["usages"])
    components = [octet.DATA, octet.AMAX]
    if info["has_columnwise_data"]:
        components.append(octet.COLUMNWISE_DATA)
    if q.scaling_mode == octet.SCALING_PER_TENSOR:
        components += [octet.SCALE, octet.SCALE_INV]
    else:
        components.append(octet.ROWWISE_SCALE_INV)
        if info["columnwise_scale_inv_bytes"]:
            components.append(octet.COLUMNWISE_SCALE_INV)
    for component in components:
        a, b = (np.atleast_1d(np.asarray(t.component(component))) for t in (q, rebuilt))
        if a.dtype == np.float64:  # a scalar component comes as a Python float
            a, b = a.astype(F32), b.astype(F32)
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8), err_msg=f"component {component}")
    assert_same(rebuilt.values(), q.values())


# -- plain tensors: E2M1 on its own, FNUZ values -----------------------------------------

def test_e2m1_data_on_its_own(ctx):
    _fp4_ctx(ctx)
    codes = np.arange(16, dtype=np.uint8).reshape(2, 8)
    expected = decode(codes, octet.E2M1)
    t = ctx.from_codes(codes, octet.E2M1)
    assert t.dtype == octet.E2M1 and t.shape == (2, 8)
    assert_same(t.values(), expected)
    assert_same(ctx.dequantize(t).numpy(), expected)
    assert_same(ctx.convert(t, octet.FP32).numpy(), expected)
    assert_same(ctx.convert(t, octet.FP16).numpy(), expected)
    np.testing.assert_array_equal(t.codes(), codes)
    ml = pytest.importorskip("ml_dtypes")
    if hasattr(ml, "float4_e2m1fn"):
        typed = ctx.tensor(codes.view(ml.float4_e2m1fn))
        assert_same(typed.values(), expected)
    assert_same(ctx.tensor(codes, octet.E2M1).values(), expected)


@pytest.mark.parametrize("dtype", [octet.E4M3FNUZ, octet.E5M2FNUZ])
def test_plain_fnuz_values(ctx, dtype):
    if not ctx.info()["dtypes"] & (1 << dtype):
        pytest.skip("the backend does not store FNUZ")
    codes = np.arange(256, dtype=np.uint8)
    t = ctx.from_codes(codes, dtype)
    assert not t.usages
    assert_same(t.values(), decode(codes, dtype))


# -- bad input: the argument and the rule --------------------------------------------------

BAD = [
    (dict(codes=np.zeros((4, 8), np.uint8), dtype=octet.FP32, scale_inv=1.0), ValueError, "dtype must be"),
    (dict(codes=np.zeros((4, 8), np.float32), dtype=octet.E4M3, scale_inv=1.0), TypeError, "codes must hold codes"),
    (dict(codes=np.full((4, 8), 300), dtype=octet.E4M3, scale_inv=1.0), ValueError, "codes (e4m3 codes) must be in"),
    (dict(codes=np.full((4, 8), 16, np.uint8), dtype=octet.E2M1, scaling_mode=octet.SCALING_MXFP4_1X32,
          scale_inv=np.full((4, 1), 127, np.uint8)), ValueError, "E2M1 codes are 0 to 15"),
    (dict(codes=np.zeros((4, 8), np.uint8), dtype=octet.E4M3, scale_inv=0.0), ValueError,
     "scale_inv must be finite and > 0"),
    (dict(codes=np.zeros((4, 8), np.uint8), dtype=octet.E4M3, scale_inv=-2.0), ValueError,
     "scale_inv must be finite and > 0"),
    (dict(codes=np.zeros((4, 8), np.uint8), dtype=octet.E4M3, scale_inv=math.nan), ValueError,
     "scale_inv must be finite and > 0"),
    (dict(codes=np.zeros((4, 8), np.uint8), dtype=octet.E4M3, scale_inv=math.inf), ValueError,
     "scale_inv must be finite and > 0"),
    (dict(codes=np.zeros((4, 8), np.uint8), dtype=octet.E4M3, scale_inv=np.ones(3)), ValueError,
     "scale_inv must be one number"),
    (dict(codes=np.zeros((4, 8), np.uint8), dtype=octet.E4M3, scaling_mode=octet.SCALING_PER_ROW,
          scale_inv=np.ones((8, 1))), ValueError, "scale_inv must have shape (4, 1)"),
    (dict(codes=np.zeros((4, 300), np.uint8), dtype=octet.E4M3, scaling_mode=octet.SCALING_BLOCK_128X128,
          scale_inv=np.ones((1, 2))), ValueError, "scale_inv must have shape (1, 3)"),
    (dict(codes=np.zeros((4, 8), np.uint8), dtype=octet.E4M3, scaling_mode=octet.SCALING_PER_ROW,
          scale_inv=np.array([[1.0], [np.inf], [1.0], [1.0]])), ValueError, "scale_inv[1, 0] is inf"),
    (dict(codes=np.zeros((4, 8), np.uint8), dtype=octet.E4M3, scaling_mode=octet.SCALING_BLOCK_1X128,
          scale_inv=np.array([[1.0], [0.0], [1.0], [1.0]])), ValueError, "must be finite and > 0"),
    (dict(codes=np.zeros((4, 64), np.uint8), dtype=octet.E4M3, scaling_mode=octet.SCALING_MXFP8_1X32,
          scale_inv=np.full((4, 2), 0.3)), ValueError, "not a power of two"),
    (dict(codes=np.zeros((4, 64), np.uint8), dtype=octet.E4M3, scaling_mode=octet.SCALING_MXFP8_1X32,
          scale_inv=np.full((4, 2), -1.0)), ValueError, "must be finite and > 0"),
    (dict(codes=np.zeros((4, 16), np.uint8), dtype=octet.E2M1, scaling_mode=octet.SCALING_NVFP4_1X16,
          scale_inv=np.full((4, 1), 0xB8, np.uint8), tensor_scale=1.0), ValueError, "a negative scale"),
    (dict(codes=np.zeros((4, 16), np.uint8), dtype=octet.E2M1, scaling_mode=octet.SCALING_NVFP4_1X16,
          scale_inv=np.full((4, 1), 0x38, np.uint8)), ValueError, "tensor_scale is needed"),
    (dict(codes=np.zeros((4, 16), np.uint8), dtype=octet.E4M3, scaling_mode=octet.SCALING_NVFP4_1X16,
          scale_inv=np.full((4, 1), 0x38, np.uint8), tensor_scale=1.0), ValueError, "takes E2M1 codes"),
    (dict(codes=np.zeros((4, 16), np.uint8), dtype=octet.E4M3, scaling_mode=3, scale_inv=1.0), ValueError,
     "scaling_mode must be"),
    (dict(codes=np.zeros((4, 16), np.uint8), dtype=octet.E4M3, scaling_mode=octet.SCALING_BLOCK_1X128,
          scale_inv=None), ValueError, "scale_inv is needed"),
    (dict(codes=np.zeros((4, 16), np.uint8), dtype=octet.E4M3, scaling_mode=octet.SCALING_BLOCK_1X128,
          scale_inv=np.ones((4, 1)), usages=octet.BOTH), ValueError, "columnwise_codes is needed"),
    (dict(codes=np.zeros((4, 16), np.uint8), dtype=octet.E4M3, scale_inv=1.0,
          columnwise_codes=np.zeros((4, 16), np.uint8)), ValueError, "columnwise_codes must have shape (16, 4)"),
    (dict(codes=np.zeros((4, 16), np.uint8), dtype=octet.E4M3, scale_inv=1.0,
          columnwise_codes=np.ones((16, 4), np.uint8)), ValueError, "must be the transpose of codes"),
    (dict(codes=np.zeros((4, 16), np.uint8), dtype=None, scale_inv=1.0), TypeError, "dtype is needed"),
    (dict(codes=np.zeros((4, 16), np.uint8), dtype=octet.E4M3, scale=2.0, scale_inv=0.3), ValueError,
     "disagree: scale_inv must be 1.0f / scale"),
    (dict(codes=np.zeros((4, 16), np.uint8), dtype=octet.E4M3, scaling_mode=octet.SCALING_PER_ROW, scale=2.0,
          scale_inv=np.ones((4, 1))), ValueError, "scale is for per-tensor scaling only"),
]


@pytest.mark.parametrize("kwargs,error,text", BAD, ids=[b[2][:40] for b in BAD])
def test_bad_arguments_name_the_argument_and_the_rule(kwargs, error, text):
    with octet.Context("reference") as ctx:
        with pytest.raises(error) as raised:
            ctx.from_codes(**kwargs)
        assert text in str(raised.value)


# -- FP8 checkpoints in the fine-grained safetensors layout ---------------------------------

def write_checkpoint(path, tensors):
    """A safetensors file by the format's definition: u64 header length,
    JSON header (dtype, shape, data_offsets), little-endian bytes."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (kind, array) in tensors.items():
        raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": kind, "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_checkpoint(path):
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    data = blob[8 + size:]
    kinds = {"F8_E4M3": np.uint8, "F32": np.float32}
    return {name: (e["dtype"], np.frombuffer(data[e["data_offsets"][0]:e["data_offsets"][1]],
                                             dtype=np.dtype(kinds[e["dtype"]]).newbyteorder("<"))
                   .reshape(e["shape"]))
            for name, e in header.items() if name != "__metadata__"}


def exact_input(rng, rows, cols, block):
    """Inputs the layer's input quantizer keeps exactly: E4M3 values with one
    +-448 * 2^k in every block of `block` columns, so each block's scale
    448 / amax is the power of two 2^-k and x * scale is an E4M3 value."""
    finite = [c for c in range(256) if math.isfinite(decode_one(c, octet.E4M3))]
    x = decode(rng.choice(finite, (rows, cols)).astype(np.uint8), octet.E4M3).astype(np.float64)
    k = rng.integers(-3, 3, (rows, 1))
    x = np.clip(x, -448, 448)
    for start in range(0, cols, block):
        x[:, start] = 448.0 * np.where(rng.random(rows) < 0.5, -1, 1)
    return (x * np.ldexp(1.0, k)).astype(F32)


@pytest.mark.parametrize("recipe,layout", [(octet.BlockScaling, "blocks"), (octet.RowwiseScaling, "rows")])
def test_fp8_checkpoint_loads_into_an_fp8_only_layer_and_saves_back(ctx, tmp_path, recipe, layout):
    out_features, in_features = 200, 300
    rng = np.random.default_rng(11)
    codes = fp8_codes(rng, (out_features, in_features), octet.E4M3)
    grid_shape = (2, 3) if layout == "blocks" else (out_features, 1)
    grid = (rng.uniform(0.5, 1.0, grid_shape) * 2.0 ** -rng.integers(6, 12, grid_shape)).astype(F32)
    bias = rng.standard_normal(out_features).astype(F32)
    path = tmp_path / "model.safetensors"
    write_checkpoint(path, {"model.layers.0.proj.weight": ("F8_E4M3", codes),
                            "model.layers.0.proj.weight_scale_inv": ("F32", grid),
                            "model.layers.0.proj.bias": ("F32", bias)})
    layer = octet.Linear(ctx, in_features, out_features, weight_storage="fp8_only", recipe=recipe(), seed=0)
    keys = fp8_checkpoints.load_safetensors(layer, str(path), prefix="model.layers.0.proj.")
    assert sorted(keys) == sorted(["model.layers.0.proj.weight", "model.layers.0.proj.weight_scale_inv",
                                   "model.layers.0.proj.bias"])

    # forward against float64 from the dequantized weight (numerics.md 8, 12, 16 bound)
    block_rows, block_cols = (128, 128) if layout == "blocks" else (1, in_features)
    weight = decode(codes, octet.E4M3).astype(np.float64) * expand(grid, out_features, in_features, block_rows,
                                                                   block_cols)
    x = exact_input(rng, 5, in_features, 128 if layout == "blocks" else in_features)
    y = layer.forward(x)
    expected = x.astype(np.float64) @ weight.T + bias
    bound = (in_features + 2) * 2.0**-23 * (np.abs(x.astype(np.float64)) @ np.abs(weight).T) \
        + 2.0**-23 * (np.abs(expected) + np.abs(bias))
    assert np.all(np.abs(y - expected) <= bound), float(np.max(np.abs(y - expected) / bound))

    # back to the same layout, bit for bit
    saved = tmp_path / "saved.safetensors"
    fp8_checkpoints.save_safetensors(layer, str(saved), prefix="model.layers.0.proj.")
    back = read_checkpoint(saved)
    assert back["model.layers.0.proj.weight"][0] == "F8_E4M3"
    np.testing.assert_array_equal(back["model.layers.0.proj.weight"][1], codes)
    assert back["model.layers.0.proj.weight_scale_inv"][0] == "F32"
    np.testing.assert_array_equal(back["model.layers.0.proj.weight_scale_inv"][1].view(np.uint32),
                                  grid.view(np.uint32))
    np.testing.assert_array_equal(back["model.layers.0.proj.bias"][1], bias)
    # and the module's reader reads the test's file as written
    tensors = fp8_checkpoints.read_safetensors(str(path))
    np.testing.assert_array_equal(np.asarray(tensors["model.layers.0.proj.weight"]).view(np.uint8), codes)


def test_fp8_checkpoint_refusals(ctx, tmp_path):
    layer = octet.Linear(ctx, 300, 200, weight_storage="fp8_only", recipe=octet.BlockScaling(), seed=0)
    codes = np.zeros((200, 300), np.uint8)
    with pytest.raises(ValueError, match=r"scale_inv of 'weight' must have shape \(2, 3\)"):
        fp8_checkpoints.load_fp8_weight(layer, "weight", codes, np.ones((200, 1), F32))
    with pytest.raises(ValueError, match=r"finite and > 0"):
        fp8_checkpoints.load_fp8_weight(layer, "weight", codes, np.zeros((2, 3), F32))
    with pytest.raises(ValueError, match=r"must have the weight's shape"):
        fp8_checkpoints.load_fp8_weight(layer, "weight", codes.T, np.ones((2, 3), F32))
    with pytest.raises(KeyError, match="weight_scale_inv"):
        fp8_checkpoints.load_safetensors(layer, {"weight": codes, "bias": np.zeros(200, F32)})
    plain = octet.Linear(ctx, 300, 200, seed=0)
    with pytest.raises(ValueError, match="fp8_only"):
        fp8_checkpoints.load_fp8_weight(plain, "weight", codes, np.ones((2, 3), F32))
    mx = octet.Linear(ctx, 64, 32, weight_storage="fp8_only", recipe=octet.MXFP8Scaling(), seed=0)
    with pytest.raises(ValueError, match="128 x 128 blocks or per-row"):
        fp8_checkpoints.fp8_weight(mx, "weight")
