"""The FP4 recipe classes (MXFP4Scaling, NVFP4Scaling) against docs/
numerics.md section 15 re-implemented here in NumPy (E2M1 by nearest-value
search, the NVFP4 and MXFP4 scale rules, Philox-4x32-10 stochastic
rounding, the FP4 GEMM order of operations), and against the same options
set by hand in the C structs and passed through the low-level calls
(octet_quantize with its FP4 options), so that every option is seen to
reach the library."""

import ctypes
import math
import struct

import numpy as np
import pytest

import octet
from octet import _lib
from _oracle import EPS32, backend_params, decode, encode, fnv1a32

BACKENDS = backend_params()
LIB = _lib.lib

# E2M1 magnitudes by code 0..7 (numerics.md section 1).
E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


@pytest.fixture(params=BACKENDS)
def ctx(request):
    with octet.Context(request.param) as c:
        if not _stores_e2m1(c):
            pytest.skip(f"backend {request.param} does not store E2M1")
        yield c


def _stores_e2m1(ctx):
    try:
        ctx.empty((1, 16), octet.E2M1, octet.ROWWISE, octet.SCALING_NVFP4_1X16).close()
        return True
    except octet.OctetError:
        return False


def f32(a):
    return np.asarray(a, dtype=np.float32)


def e2m1_encode(y):
    """Saturating round-to-nearest-even FP32 -> E2M1 code (sign 0x8 kept),
    by nearest-value search; ties go to the even code; beyond 6 -> 6."""
    y = f32(y)
    a = np.abs(y).astype(np.float64)
    dist = np.abs(a[..., None] - E2M1_VALUES)
    best = dist.min(axis=-1, keepdims=True)
    ties = dist == best
    even = ties & (np.arange(8) % 2 == 0)
    code = np.where(even.any(axis=-1), even.argmax(axis=-1), ties.argmax(axis=-1))
    code = np.where(a > 6.0, 7, code)
    return (code | np.where(np.signbit(y), 0x8, 0)).astype(np.uint8)


def e2m1_decode(codes):
    codes = np.asarray(codes)
    return np.where(codes & 0x8, -1.0, 1.0) * E2M1_VALUES[codes & 0x7]


# ---- Philox-4x32-10 and stochastic rounding (numerics.md 15.1) ----------------

def philox(counter, key):
    """philox4x32_10 of uint64 arrays holding 32-bit words: counter (4, n), key (2,)."""
    m0, m1, w0, w1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
    c = [np.asarray(w, dtype=np.uint64) for w in counter]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    mask = np.uint64(0xFFFFFFFF)
    for r in range(10):
        if r:
            k0, k1 = (k0 + np.uint64(w0)) & mask, (k1 + np.uint64(w1)) & mask
        p0 = np.uint64(m0) * c[0]
        p1 = np.uint64(m1) * c[2]
        hi0, lo0 = p0 >> np.uint64(32), p0 & mask
        hi1, lo1 = p1 >> np.uint64(32), p1 & mask
        c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
    return c


def random_bits(n, seed, offset):
    i = np.arange(n, dtype=np.uint64)
    block = i >> np.uint64(2)
    mask = np.uint64(0xFFFFFFFF)
    words = philox([block & mask, block >> np.uint64(32), np.full(n, offset & 0xFFFFFFFF, np.uint64),
                    np.full(n, offset >> 32, np.uint64)], (seed & 0xFFFFFFFF, seed >> 32))
    words = np.stack(words)
    return words[(i & np.uint64(3)).astype(np.int64), np.arange(n)]


def e2m1_stochastic(y, r):
    """15.1: hi with probability D / 2^32, D = floor((a - lo) / (hi - lo) * 2^32)."""
    y = f32(y)
    a = np.abs(y).astype(np.float64)
    lo_code = np.searchsorted(E2M1_VALUES, a, side="right") - 1
    lo_code = np.clip(lo_code, 0, 7)
    lo = E2M1_VALUES[lo_code]
    hi = E2M1_VALUES[np.minimum(lo_code + 1, 7)]
    spacing = np.where(hi > lo, hi - lo, 1.0)
    d = np.floor((a - lo) / spacing * 2.0**32)
    code = np.where(a >= 6.0, 7, np.where(r.astype(np.float64) < d, lo_code + 1, lo_code))
    return (code | np.where(np.signbit(y), 0x8, 0)).astype(np.uint8)


# ---- the quantize rules (numerics.md 15.3), finite inputs ---------------------

def nvfp4_quantize(x, block_rows=1, bits=None):
    """x [R, C] -> (codes [R, C], E4M3 scale codes [grid], g, X per element)."""
    x = f32(x)
    rows, cols = x.shape
    amax_all = np.float32(np.abs(x).max()) if x.size else np.float32(0)
    g = np.float32(amax_all / np.float32(2688.0))
    if g == 0:
        g = np.float32(1.0)
    grid_r, grid_c = -(-rows // block_rows), -(-cols // 16)
    scale_codes = np.zeros((grid_r, grid_c), np.uint8)
    big_x = np.zeros_like(x)
    for br in range(grid_r):
        for bc in range(grid_c):
            rs, cs = slice(br * block_rows, (br + 1) * block_rows), slice(bc * 16, (bc + 1) * 16)
            amax = np.float32(np.abs(x[rs, cs]).max())
            s = encode(np.float32(np.float32(amax / np.float32(6.0)) / g), octet.E4M3)
            scale_codes[br, bc] = s
            big_x[rs, cs] = np.float32(np.float32(decode(s, octet.E4M3)) * g)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(big_x == 0, np.float32(0) * x, f32(x / big_x))
    codes = e2m1_encode(y) if bits is None else e2m1_stochastic(y, bits.reshape(x.shape))
    return codes, scale_codes, g, big_x


def mxfp4_quantize(x, floor=False):
    x = f32(x)
    rows, cols = x.shape
    grid_c = -(-cols // 32)
    scale_codes = np.zeros((rows, grid_c), np.uint8)
    big_x = np.zeros_like(x)
    for r in range(rows):
        for bc in range(grid_c):
            cs = slice(bc * 32, (bc + 1) * 32)
            amax = np.float32(np.abs(x[r, cs]).max())
            if amax == 0:
                code = 0
            elif floor:
                code = min(max(math.floor(math.log2(amax)) - 2 + 127, 0), 254)
            else:
                quotient = np.float32(amax / np.float32(6.0))
                code = min(max(math.ceil(math.log2(quotient)) + 127, 0), 254) if quotient > 0 else 0
            scale_codes[r, bc] = code
            big_x[r, cs] = np.float32(2.0 ** (code - 127))
    return e2m1_encode(f32(x / big_x)), scale_codes, big_x


def low_level_quantize(ctx, x, mode, usages, stochastic=False, hadamard=False, seed=0, offset=0):
    """octet_quantize with the FP4 options set by hand in the C struct."""
    src = ctx.tensor(f32(x))
    out = ctx.empty(x.shape, octet.E2M1, usages, mode)
    options = _lib.QuantizeOptions()
    assert LIB.octet_quantize_options_init_sized(ctypes.byref(options), ctypes.sizeof(options)) == 0
    options.stochastic_rounding = int(stochastic)
    options.hadamard_transform = int(hadamard)
    options.seed = seed
    options.offset = offset
    assert LIB.octet_quantize(ctx.handle, src.handle, out.handle, ctypes.byref(options)) == 0
    return out


def counter_of(checkpoint):
    """The stream counter an FP4 quantizer's checkpoint carries (docs/recipes.md):
    the next stream offset, 2n after n quantizes."""
    history_len, extension = struct.unpack_from("<iI", checkpoint, 24)
    assert extension == 8
    assert struct.unpack_from("<I", checkpoint, len(checkpoint) - 4)[0] == fnv1a32(checkpoint[:-4])
    return struct.unpack_from("<Q", checkpoint, 68 + 4 * history_len)[0]


# ---- the classes: defaults, options, validation, repr -------------------------

def test_defaults_are_the_librarys_and_tensor_formats_follow_the_options():
    nv = octet.NVFP4Scaling()
    assert nv.options() == {"weight_2d": True, "stochastic_rounding": True, "hadamard_transform": True, "seed": 0}
    assert nv.info() == {"kind": "nvfp4", "format": "e2m1", "override_fprop": False, "override_dgrad": False,
                         "override_wgrad": False}
    assert nv.tensor_format("input") == (octet.E2M1, octet.SCALING_NVFP4_1X16)
    assert nv.tensor_format("weight") == (octet.E2M1, octet.SCALING_NVFP4_16X16)
    assert nv.tensor_format("gradient") == (octet.E2M1, octet.SCALING_NVFP4_1X16)
    assert octet.NVFP4Scaling(weight_2d=False).tensor_format("weight") == (octet.E2M1, octet.SCALING_NVFP4_1X16)
    mx = octet.MXFP4Scaling()
    assert mx.options() == {"rounding": "rceil", "stochastic_rounding": False, "seed": 0}
    assert mx.info()["kind"] == "mxfp4" and mx.info()["format"] == "e2m1"
    for role in ("input", "weight", "gradient"):
        assert mx.tensor_format(role) == (octet.E2M1, octet.SCALING_MXFP4_1X32)
    assert octet.MXFP4Scaling(rounding=octet.MX_ROUND_FLOOR).options()["rounding"] == "floor"
    assert (octet.MXFP4Scaling.kind, octet.NVFP4Scaling.kind) == (6, 7)  # OCTET_RECIPE_MXFP4 / _NVFP4


def test_repr_names_every_option():
    r = octet.NVFP4Scaling(weight_2d=False, stochastic_rounding=False, hadamard_transform=True, seed=2**64 - 1)
    assert repr(r) == ("NVFP4Scaling(weight_2d=False, stochastic_rounding=False, hadamard_transform=True, "
                       "seed=18446744073709551615)")
    assert repr(octet.MXFP4Scaling(rounding="FLOOR", seed=7)) == (
        "MXFP4Scaling(rounding='floor', stochastic_rounding=False, seed=7)")
    r.close()
    assert repr(r) == "NVFP4Scaling(closed)"


@pytest.mark.parametrize("cls,kwargs,error,words", [
    (octet.NVFP4Scaling, {"seed": -1}, ValueError, ["seed", "[0, 2**64)"]),
    (octet.NVFP4Scaling, {"seed": 2**64}, ValueError, ["seed", "uint64_t"]),
    (octet.MXFP4Scaling, {"seed": 1.5}, TypeError, ["seed", "integer", "float"]),
    (octet.MXFP4Scaling, {"seed": True}, TypeError, ["seed", "bool"]),
    (octet.MXFP4Scaling, {"seed": "7"}, TypeError, ["seed", "str"]),
    (octet.MXFP4Scaling, {"rounding": "up"}, ValueError, ["rounding", "'rceil'", "'floor'", "'up'"]),
    (octet.MXFP4Scaling, {"rounding": 2}, ValueError, ["rounding", "got 2"]),
    (octet.MXFP4Scaling, {"format": "e4m3"}, TypeError, ["format"]),
    (octet.NVFP4Scaling, {"weight2d": True}, TypeError, ["weight2d"]),
])
def test_bad_options_raise_naming_the_argument_and_the_rule(cls, kwargs, error, words):
    with pytest.raises(error) as info:
        cls(**kwargs)
    for word in words:
        assert word in str(info.value), str(info.value)


# ---- the options reach the library --------------------------------------------

def test_nvfp4_input_quantize_matches_numerics_15(ctx):
    rng = np.random.default_rng(21)
    x = (rng.standard_normal((32, 40)) * np.exp2(rng.integers(-6, 6, (32, 1)))).astype(np.float32)
    x[3, :16] = 0.0  # a zero block: scale code 0, codes +-0
    q = octet.Quantizer(octet.NVFP4Scaling(hadamard_transform=False), "input")
    t = q.quantize(ctx, x)
    assert (t.dtype, t.scaling_mode) == (octet.E2M1, octet.SCALING_NVFP4_1X16)
    codes, scales, g, big_x = nvfp4_quantize(x)
    assert np.array_equal(t.codes(), codes)
    assert np.array_equal(t.component(octet.ROWWISE_SCALE_INV), scales)
    codes_t, scales_t, g_t, _ = nvfp4_quantize(x.T)
    assert np.array_equal(t.codes(octet.COLUMNWISE_DATA), codes_t)
    assert np.array_equal(t.component(octet.COLUMNWISE_SCALE_INV), scales_t)
    assert np.array_equal(t.component(octet.SCALE_INV), f32([g, g_t]))
    # Dequantize: decode(q) * X in FP32.
    assert np.array_equal(t.values(), f32(f32(e2m1_decode(codes)) * big_x))


@pytest.mark.parametrize("floor", [False, True])
def test_mxfp4_rounding_option_reaches_the_scales(ctx, floor):
    rng = np.random.default_rng(22)
    x = (rng.standard_normal((8, 70)) * 3.0).astype(np.float32)
    t = octet.Quantizer(octet.MXFP4Scaling(rounding="floor" if floor else "rceil"), "weight").quantize(
        ctx, x, usages=octet.ROWWISE)
    codes, scales, _ = mxfp4_quantize(x, floor)
    assert np.array_equal(t.component(octet.ROWWISE_SCALE_INV), scales)
    assert np.array_equal(t.codes(), codes)


def test_nvfp4_weight_2d_blocks_are_16x16(ctx):
    rng = np.random.default_rng(23)
    w = rng.standard_normal((40, 48)).astype(np.float32)
    w[16:32] *= 64.0  # the second block row needs other scales
    for weight_2d, block_rows in ((True, 16), (False, 1)):
        t = octet.Quantizer(octet.NVFP4Scaling(weight_2d=weight_2d), "weight").quantize(ctx, w)
        codes, scales, _, _ = nvfp4_quantize(w, block_rows)
        assert t.info()["block_rows"] == block_rows
        assert np.array_equal(t.component(octet.ROWWISE_SCALE_INV), scales)
        assert np.array_equal(t.codes(), codes)
    # 16x16: the columnwise copy is the transpose of the rowwise one.
    t = octet.Quantizer(octet.NVFP4Scaling(), "weight").quantize(ctx, w)
    assert np.array_equal(t.codes(octet.COLUMNWISE_DATA), t.codes().T)


@pytest.mark.parametrize("cls,mode", [(octet.NVFP4Scaling, octet.SCALING_NVFP4_1X16),
                                      (octet.MXFP4Scaling, octet.SCALING_MXFP4_1X32)])
def test_stochastic_rounding_and_seed_reach_the_library(ctx, cls, mode):
    rng = np.random.default_rng(24)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    seed = 0x123456789ABCDEF0
    options = {"seed": seed, "stochastic_rounding": True}
    if cls is octet.NVFP4Scaling:
        options["hadamard_transform"] = False
    q = octet.Quantizer(cls(**options), "gradient")
    first = q.quantize(ctx, x, usages=octet.ROWWISE).codes()
    second = q.quantize(ctx, x, usages=octet.ROWWISE).codes()
    assert counter_of(q.save()) == 4  # the next stream offset: two streams per quantize
    # The n-th quantize is octet_quantize with this seed and offset 2n.
    for n, got in enumerate((first, second)):
        want = low_level_quantize(ctx, x, mode, octet.ROWWISE, stochastic=True, seed=seed, offset=2 * n)
        assert np.array_equal(got, want.codes())
    assert not np.array_equal(first, second)  # a new stream per quantize
    # numerics.md 15.1 here: Philox bits of (seed, offset 0), element index row-major.
    if cls is octet.NVFP4Scaling:
        codes, _, _, _ = nvfp4_quantize(x, bits=random_bits(x.size, seed, 0))
    else:
        _, _, big_x = mxfp4_quantize(x)
        codes = e2m1_stochastic(f32(x / big_x), random_bits(x.size, seed, 0).reshape(x.shape))
    assert np.array_equal(first, codes)
    # Another seed draws other bits; the input role never rounds stochastically.
    other = cls(**{**options, "seed": seed + 1})
    assert not np.array_equal(octet.Quantizer(other, "gradient").quantize(ctx, x, usages=octet.ROWWISE).codes(),
                              first)
    plain = octet.Quantizer(cls(**options), "input").quantize(ctx, x, usages=octet.ROWWISE).codes()
    assert np.array_equal(plain, low_level_quantize(ctx, x, mode, octet.ROWWISE).codes())


def test_stream_counter_survives_a_checkpoint(ctx):
    rng = np.random.default_rng(25)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    recipe = octet.NVFP4Scaling(seed=99)
    q = octet.Quantizer(recipe, "gradient")
    q.quantize(ctx, x)
    saved = q.save()
    assert counter_of(saved) == 2
    uninterrupted = q.quantize(ctx, x).codes()
    resumed = octet.Quantizer(recipe, "gradient")
    resumed.load(saved)
    assert np.array_equal(resumed.quantize(ctx, x).codes(), uninterrupted)
    with pytest.raises(octet.OctetError):  # another recipe kind's quantizer refuses it
        octet.Quantizer(octet.MXFP4Scaling(), "gradient").load(saved)


def test_hadamard_transform_option_reaches_the_columnwise_copy(ctx):
    rng = np.random.default_rng(26)
    x = rng.standard_normal((32, 48)).astype(np.float32)
    on = octet.Quantizer(octet.NVFP4Scaling(seed=5), "input").quantize(ctx, x)
    off = octet.Quantizer(octet.NVFP4Scaling(seed=5, hadamard_transform=False), "input").quantize(ctx, x)
    assert np.array_equal(on.codes(), off.codes())  # the rowwise copy is never transformed
    assert not np.array_equal(on.codes(octet.COLUMNWISE_DATA), off.codes(octet.COLUMNWISE_DATA))
    want = low_level_quantize(ctx, x, octet.SCALING_NVFP4_1X16, octet.BOTH, hadamard=True, seed=5)
    assert np.array_equal(on.codes(octet.COLUMNWISE_DATA), want.codes(octet.COLUMNWISE_DATA))
    assert np.array_equal(off.codes(octet.COLUMNWISE_DATA), nvfp4_quantize(x.T)[0])


# ---- layers, autocast and octet.torch -----------------------------------------

def fp4_gemm(a_codes, a_x, b_codes, b_x, ga, gb, bk):
    """15.4 in FP32: per k-block exact partial sums, scaled by sa * sb into acc."""
    a = e2m1_decode(a_codes)
    b = e2m1_decode(b_codes)
    m, k = a.shape
    acc = np.zeros((m, b.shape[0]), np.float32)
    for kb in range(0, k, bk):
        partial = f32(a[:, kb:kb + bk] @ b[:, kb:kb + bk].T)  # exact
        sa = f32(a_x[:, kb] / ga)[:, None]
        sb = f32(b_x[:, kb] / gb)[None, :]
        acc = f32(acc + f32(partial * f32(sa * sb)))
    return f32(f32(np.float32(1.0) * f32(ga * gb)) * acc)


def test_linear_forward_under_nvfp4_matches_numerics_15(ctx):
    rng = np.random.default_rng(27)
    x = rng.standard_normal((20, 48)).astype(np.float32)
    w = (rng.standard_normal((24, 48)) / 7).astype(np.float32)
    b = rng.standard_normal(24).astype(np.float32)
    layer = octet.Linear(ctx, 48, 24, recipe=octet.NVFP4Scaling(seed=3))
    layer.set_parameter("weight", w)
    layer.set_parameter("bias", b)
    y = np.asarray(layer.forward(x), dtype=np.float64)
    xc, _, gx, xx = nvfp4_quantize(x)
    wc, _, gw, wx = nvfp4_quantize(w, 16)
    want = fp4_gemm(xc, xx, wc, wx, gx, gw, 16).astype(np.float64) + b
    products = np.abs(e2m1_decode(xc) * xx) @ np.abs(e2m1_decode(wc) * wx).T
    bound = (48 + 2) * EPS32 * products + 2 * EPS32 * (np.abs(want) + np.abs(b))
    assert np.all(np.abs(y - want) <= bound), np.max(np.abs(y - want) / bound)
    # FP4 is far from FP32: the test would notice a high-precision run.
    assert np.max(np.abs(y - (x.astype(np.float64) @ w.T + b))) > 1e3 * np.max(bound)
    # Under an autocast scope a layer without a recipe gives the same bits.
    plain = octet.Linear(ctx, 48, 24)
    plain.set_parameter("weight", w)
    plain.set_parameter("bias", b)
    with ctx.autocast(octet.NVFP4Scaling(seed=3)):
        assert np.array_equal(np.asarray(plain.forward(x)), np.asarray(layer.forward(x)))
        assert ctx.autocast_state()[1].info()["kind"] == "nvfp4"


@pytest.mark.parametrize("recipe", [lambda: octet.MXFP4Scaling(stochastic_rounding=True, seed=11),
                                    lambda: octet.NVFP4Scaling(seed=11)])
def test_linear_trains_a_step_under_each_fp4_recipe(ctx, recipe):
    rng = np.random.default_rng(28)
    layer = octet.Linear(ctx, 32, 16, recipe=recipe())
    x = rng.standard_normal((16, 32)).astype(np.float32)
    dy = rng.standard_normal((16, 16)).astype(np.float32)
    y, saved = layer.forward(x, training=True)
    dx = np.asarray(layer.backward(saved, dy))
    dw = np.asarray(layer.get_gradient("weight"))
    w = np.asarray(layer.get_parameter("weight"))
    assert np.all(np.isfinite(dx)) and np.all(np.isfinite(dw))
    # Within FP4's precision of the FP32 gradients (E2M1 keeps ~1 bit: a loose, relative check).
    for got, want in ((dx, dy @ w), (dw, dy.T @ x)):
        rel = np.linalg.norm(got - want) / np.linalg.norm(want)
        assert rel < 0.5, rel
    assert layer.quantizer("gradient").info().recipe_kind == _kind_name(layer.recipe)


def _kind_name(recipe):
    return recipe.info()["kind"]


def test_torch_autocast_takes_the_fp4_recipes():
    torch = pytest.importorskip("torch")
    import octet.torch as ot
    ctx = octet.Context("reference")
    model = ot.Linear(32, 8, context=ctx)
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(29))  # a fresh (aligned) allocation
    with ot.autocast(octet.NVFP4Scaling(seed=1), context=ctx):
        y_fp4 = model(x)
    y_fp32 = model(x)
    assert y_fp4.shape == y_fp32.shape
    assert not torch.equal(y_fp4, y_fp32)
    rel = float(torch.linalg.norm(y_fp4 - y_fp32).detach() / torch.linalg.norm(y_fp32).detach())
    assert 0 < rel < 0.5
