"""The package as NumPy and ml_dtypes users expect it (issue 13 item 4):
float64 and lists converted, quantize's default scale from the data's amax
and saturation warned about, ml_dtypes arrays in and out, numpy.asarray,
layer parameters initialised as torch.nn.Linear's, errors naming the
argument and what to do.

Expectations are computed here: ml_dtypes conversions are the oracle for
codes (where ml_dtypes is installed; the exhaustive-search encoder of
_oracle.py otherwise), kaiming bounds and the draws re-done with NumPy."""

import math
import warnings

import numpy as np
import pytest

import octet
from octet import _dtypes
from _oracle import backend_params, encode

try:  # optional: the tests that need it skip, saying so
    import ml_dtypes
except ImportError:
    ml_dtypes = None

NEEDS_ML = pytest.mark.skipif(ml_dtypes is None, reason="needs ml_dtypes (pip install ml_dtypes): the FP8/BF16 "
                                                        "NumPy types")


@pytest.fixture(params=backend_params())
def ctx(request):
    with octet.Context(request.param) as c:
        yield c


# ---- float64 and lists ---------------------------------------------------------------

def test_float64_and_lists_become_fp32_rounded_to_nearest_even(ctx):
    x = np.random.default_rng(1).standard_normal((3, 5)) * 1e3
    t = ctx.tensor(x)
    assert t.dtype == octet.FP32
    assert np.array_equal(t.numpy(), x.astype(np.float32))     # NumPy's float64 -> float32 cast: RNE
    assert np.array_equal(ctx.tensor(x.tolist()).numpy(), x.astype(np.float32))
    assert np.array_equal(ctx.tensor([[1, 2], [3, 16777217]]).numpy(), np.array([[1, 2], [3, 16777216]], np.float32))
    assert ctx.tensor(2.5).numpy().tolist() == [2.5]             # a scalar: one element
    assert ctx.tensor(x, dtype=octet.FP16).numpy().dtype == np.float16


def test_float64_to_bf16_rounds_twice():
    """Documented: float64 -> float32 (RNE), then -> BF16 (RNE). A value just
    above a BF16 tie is first rounded onto the tie, which then goes to even."""
    with octet.Context("reference") as ctx:
        v = 1.0 + 2.0**-8 + 2.0**-30          # direct rounding to BF16 would give 1 + 2^-7
        got = ctx.tensor([v], dtype=octet.BF16)
        assert got.values().tolist() == [1.0]
        assert np.float32(v) == np.float32(1.0 + 2.0**-8)       # the first rounding lands on the tie
        if ml_dtypes is not None:
            assert got.codes().tolist() == np.array([np.float32(v)]).astype(ml_dtypes.bfloat16).view(np.uint16) \
                .tolist()


def test_values_are_refused_where_codes_are_meant_with_advice_that_works(ctx):
    x = np.array([0.5, -3.0, 100.0])
    with pytest.raises(TypeError, match=r"dtype=e4m3 takes raw uint8 codes.*ctx\.quantize\(x, octet\.E4M3\)"):
        ctx.tensor(x, dtype=octet.E4M3)
    q = ctx.quantize(x, octet.E4M3)                             # the advice: works
    assert np.allclose(q.values(), x, rtol=2.0**-3)
    codes = octet.fp8_encode(x, octet.E4M3)                      # the other advice
    assert np.array_equal(ctx.tensor(codes, dtype=octet.E4M3).codes(), codes)
    with pytest.raises(TypeError, match="ragged"):
        ctx.tensor([[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError, match="real numbers"):
        ctx.tensor(np.array([True, False]))
    with pytest.raises(ValueError, match="dtype must be octet.E4M3, E5M2, E4M3FNUZ or E5M2FNUZ"):
        ctx.quantize(x, octet.BF16)


# ---- quantize: the default scale and saturation --------------------------------------

@pytest.mark.parametrize("dtype,fp8_max", [(octet.E4M3, 448.0), (octet.E5M2, 57344.0)])
def test_quantize_defaults_to_current_scaling(ctx, dtype, fp8_max):
    x = (np.random.default_rng(2).standard_normal((6, 16)) * 1000).astype(np.float32)
    amax = np.float32(np.abs(x).max())
    with warnings.catch_warnings():
        warnings.simplefilter("error")                          # nothing saturates: no warning
        q, stats = ctx.quantize(x, dtype, stats=True)
    scale = np.float32(fp8_max) / amax
    assert q.component(octet.SCALE) == scale
    assert stats["saturated_count"] == 0 and stats["amax"] == amax and stats["total_count"] == x.size
    assert np.array_equal(q.codes(), encode(x * scale, dtype))
    assert np.abs(q.values()).max() <= amax * (1 + 2.0**-3)


def test_quantize_default_scale_edge_cases(ctx):
    assert ctx.quantize(np.zeros((2, 4))).component(octet.SCALE) == 1.0          # amax 0: scale 1
    with pytest.warns(octet.SaturationWarning, match="not finite"):
        q = ctx.quantize(np.array([[np.inf, 1.0]]))                               # amax inf: scale 1
    assert q.component(octet.SCALE) == 1.0 and q.values().tolist() == [[448.0, 1.0]]
    q, stats = ctx.quantize(np.array([[np.nan, 2.0]]), stats=True)               # the amax ignores NaN
    assert q.component(octet.SCALE) == 224.0 and stats["nan_count"] == 1
    assert np.isnan(q.values()[0, 0]) and q.values()[0, 1] == 2.0
    assert ctx.quantize(np.full((1, 2), np.nan)).component(octet.SCALE) == 1.0    # all NaN: amax 0
    tiny = np.array([[1e-40, 0.0]], np.float32)                                   # 448 / amax overflows
    assert ctx.quantize(tiny).component(octet.SCALE) == np.finfo(np.float32).max


def test_a_callers_scale_that_saturates_is_reported(ctx):
    x = np.array([[1.0, 2.0, 1000.0, -5000.0]], np.float32)
    with pytest.warns(octet.SaturationWarning) as record:
        q, stats = ctx.quantize(x, scale=1.0, stats=True)
    message = str(record[0].message)
    assert "2 of 4 values went beyond" in message and "clamped to +-448" in message and "scale=None" in message
    assert f"at most {448.0 / 5000.0:.6g}" in message           # fp8_max / amax: a scale that avoids it
    assert stats["saturated_count"] == 2
    assert q.values().tolist() == [[1.0, 2.0, 448.0, -448.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ctx.quantize(x, scale=448.0 / 5000.0)                   # within range: silent
        ctx.quantize(np.array([[450.0, 464.0]]), scale=1.0)     # rounds to 448: not saturation (octet.h)
    with pytest.warns(octet.SaturationWarning, match="became NaN/inf"):
        q = ctx.quantize(x, octet.E5M2, scale=100.0, saturate=False)
    assert np.isinf(q.values()[0, 2:]).all()


# ---- ml_dtypes arrays in and out, numpy.asarray ---------------------------------------

def _ml_cases():
    cases = [("float8_e4m3fn", octet.E4M3), ("float8_e5m2", octet.E5M2), ("bfloat16", octet.BF16)]
    return cases + [("float8_e8m0fnu", octet.E8M0)]


@NEEDS_ML
@pytest.mark.parametrize("name,dtype", _ml_cases(), ids=[n for n, _ in _ml_cases()])
def test_ml_dtypes_arrays_round_trip(ctx, name, dtype):
    if not hasattr(ml_dtypes, name):
        pytest.skip(f"ml_dtypes {ml_dtypes.__version__} has no {name} (pip install -U ml_dtypes)")
    typ = getattr(ml_dtypes, name)
    values = np.array([[0.5, 1.0, 2.0, 4.0], [0.125, 8.0, 64.0, 0.25]], np.float32)
    if dtype != octet.E8M0:
        values[1, 0] = -3.0
    a = values.astype(typ)
    t = ctx.tensor(a)
    assert t.dtype == dtype and t.shape == a.shape
    back = t.numpy()
    assert back.dtype == a.dtype
    raw = np.uint16 if dtype == octet.BF16 else np.uint8
    assert np.array_equal(back.view(raw), a.view(raw))           # the same codes
    assert np.array_equal(t.codes(), a.view(raw))
    assert np.array_equal(t.values(), a.astype(np.float32))     # decoded as ml_dtypes decodes
    assert np.asarray(t).dtype == a.dtype and np.array_equal(np.asarray(t).view(raw), a.view(raw))
    with pytest.raises(ValueError, match="dtype= asks for fp32"):
        ctx.tensor(a, dtype=octet.FP32)


@NEEDS_ML
def test_quantized_codes_match_ml_dtypes(ctx):
    x = np.random.default_rng(3).standard_normal((4, 32)).astype(np.float32)
    q = ctx.quantize(x)
    scale = np.float32(q.component(octet.SCALE))
    assert np.array_equal(q.codes(), (x * scale).astype(ml_dtypes.float8_e4m3fn).view(np.uint8))
    assert q.numpy().dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    bf = ctx.convert(x, octet.BF16)
    assert np.array_equal(bf.numpy().view(np.uint16), x.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_without_ml_dtypes_numpy_gives_codes_and_asarray_values(ctx, monkeypatch):
    monkeypatch.setattr(_dtypes, "_ML", {})
    codes = octet.fp8_encode([1.5, -2.0], octet.E4M3)
    t = ctx.tensor(codes, dtype=octet.E4M3)
    assert t.numpy().dtype == np.uint8 and np.array_equal(t.numpy(), codes)
    assert np.asarray(t).dtype == np.float32 and np.asarray(t).tolist() == [1.5, -2.0]


def test_asarray(ctx):
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    t = ctx.tensor(x)
    assert np.asarray(t).dtype == np.float32 and np.array_equal(np.asarray(t), x)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    q = ctx.quantize(x)
    assert np.array_equal(np.asarray(q), ctx.dequantize(q).numpy())  # a quantized tensor: its values
    assert np.asarray(q).shape == (3, 4) and np.abs(np.asarray(q) - x).max() <= 5.5 * 2.0**-4
    with pytest.raises(ValueError, match="always copies"):
        np.asarray(t, copy=False)
    assert np.array_equal(np.array(t) + 1, x + 1)


# ---- layers initialise their parameters ------------------------------------------------

def _draws(seed, specs):
    """What reset_parameters draws: uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)),
    float64 draws rounded to float32, in parameter order."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in), size=shape).astype(np.float32)
            for shape, fan_in in specs]


def test_linear_is_initialised_like_torch(ctx):
    layer = octet.Linear(ctx, 24, 10, seed=7)
    w, b = _draws(7, [((10, 24), 24), ((10,), 24)])
    assert np.array_equal(layer.get_parameter("weight"), w)
    assert np.array_equal(layer.get_parameter("bias"), b)
    bound = 1 / math.sqrt(24)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound   # fills the range
    again = octet.Linear(ctx, 24, 10, seed=np.random.default_rng(7))     # a Generator is used as is
    assert np.array_equal(again.get_parameter("weight"), w)
    other = octet.Linear(ctx, 24, 10)                                     # fresh entropy
    assert not np.array_equal(other.get_parameter("weight"), w)
    assert np.isfinite(other.forward(np.ones((2, 24)))).all()
    other.reset_parameters(7)
    assert np.array_equal(other.get_parameter("weight"), w)
    with pytest.raises(TypeError, match="seed must be"):
        octet.Linear(ctx, 4, 4, seed=1.5)


@pytest.mark.parametrize("activation", ["gelu", "swiglu"])
def test_layernorm_mlp_is_initialised_like_torch(ctx, activation):
    hidden, ffn = 16, 24
    mlp = octet.LayerNormMLP(ctx, hidden, ffn, activation=activation, seed=11)
    rows = 2 * ffn if activation == "swiglu" else ffn
    w1, b1, w2, b2 = _draws(11, [((rows, hidden), hidden), ((rows,), hidden), ((hidden, ffn), ffn), ((hidden,), ffn)])
    assert np.array_equal(mlp.get_parameter("norm_weight"), np.ones(hidden, np.float32))
    assert np.array_equal(mlp.get_parameter("norm_bias"), np.zeros(hidden, np.float32))
    for name, want in (("fc1_weight", w1), ("fc1_bias", b1), ("fc2_weight", w2), ("fc2_bias", b2)):
        assert np.array_equal(mlp.get_parameter(name), want), name
    assert np.isfinite(mlp.forward(np.random.default_rng(0).standard_normal((3, hidden)))).all()


def test_layernorm_linear_rmsnorm_and_bf16_parameters(ctx):
    layer = octet.LayerNormLinear(ctx, 16, 8, norm="rmsnorm", params_dtype="bf16", seed=5)
    assert layer.parameter_names == ("norm_weight", "weight", "bias")
    w, b = _draws(5, [((8, 16), 16), ((8,), 16)])
    assert np.array_equal(layer.get_parameter("norm_weight"), np.ones(16, np.float32))
    if ml_dtypes is not None:  # BF16: the float32 draw rounded to nearest even
        assert np.array_equal(layer.get_parameter("weight"), w.astype(ml_dtypes.bfloat16).astype(np.float32))
        assert np.array_equal(layer.get_parameter("bias"), b.astype(ml_dtypes.bfloat16).astype(np.float32))
    assert np.abs(layer.get_parameter("weight") - w).max() <= 2.0**-8 * np.abs(w).max()


def test_weights_the_layer_does_not_hold(ctx):
    lent = octet.Linear(ctx, 8, 4, skip_weight_allocation=True, seed=3)   # only the bias is drawn
    (b,) = _draws(3, [((4,), 8)])
    assert np.array_equal(lent.get_parameter("bias"), b)
    fp8 = octet.Linear(ctx, 32, 16, weight_storage="fp8_only", recipe=octet.DelayedScaling(), seed=3)
    y = fp8.forward(np.ones((2, 32)))
    assert np.isfinite(y).all() and np.abs(y).max() > 0


@NEEDS_ML
def test_wrap_takes_ml_dtypes_arrays(ctx):
    a = octet.aligned_empty((4, 8), ml_dtypes.bfloat16, ctx.info()["alignment"])
    a[...] = np.arange(32, dtype=np.float32).reshape(4, 8).astype(ml_dtypes.bfloat16)
    t = ctx.wrap(a)
    assert t.dtype == octet.BF16 and np.array_equal(t.values(), a.astype(np.float32))


def test_wrap_refuses_float64_with_advice(ctx):
    a = octet.aligned_empty((2, 2), np.float64, ctx.info()["alignment"])
    with pytest.raises(TypeError, match=r"ctx\.tensor\(x\) rounds it to float32"):
        ctx.wrap(a)


def test_numpy_types_name_octet_dtypes(ctx):
    x = np.array([[1.0, -2.0, 3.0, 0.5]])
    assert ctx.tensor(x, dtype=np.float16).dtype == octet.FP16
    assert ctx.convert(x, np.float32).dtype == octet.FP32
    with pytest.raises(TypeError, match=r"must be an Octet dtype .* or the NumPy type of one"):
        ctx.tensor(x, dtype=np.float64)
    if ml_dtypes is not None:
        q = ctx.quantize(x, ml_dtypes.float8_e5m2)
        assert q.dtype == octet.E5M2
        assert ctx.tensor(x, dtype=ml_dtypes.bfloat16).dtype == octet.BF16


def test_saturation_is_reported_without_the_statistics_kernel(ctx, monkeypatch):
    """A backend without OCTET_FEATURE_QUANTIZE_STATISTICS: the saturation
    is judged from amax * scale (the same thresholds), the counts are None."""
    info = ctx.info
    monkeypatch.setattr(ctx, "info", lambda: {**info(), "features": 0})
    x = np.array([[1.0, 2.0, 1000.0, -5000.0]], np.float32)
    with pytest.warns(octet.SaturationWarning, match="some of 4 values went beyond"):
        q, stats = ctx.quantize(x, scale=1.0, stats=True)
    assert stats["saturated_count"] is None and stats["total_count"] == 4 and stats["amax"] == 5000.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q, stats = ctx.quantize(np.array([[450.0, 464.0]]), scale=1.0, stats=True)
    assert q.values().tolist() == [[448.0, 448.0]]
