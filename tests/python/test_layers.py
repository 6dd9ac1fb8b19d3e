"""Layers (Linear, LayerNormLinear, LayerNormMLP) against NumPy
re-implementations in double precision, with error bounds derived from
docs/numerics.md: section 8's GEMM bound (k * 2^-23 * sum |products|, plus
the rounding of the scaling, bias and output) and, in FP8, the quantization
computed exactly by the test's own encoder (_oracle.encode), so the
reference multiplies the very FP8 values the layer must use. The
LayerNorm/RMSNorm bounds add a worst-case (cols + 8) ulps for the FP32
mean/variance sums; since that is looser than the gap between GELU's tanh
and erf forms, the activation formulas are also checked exactly, with the
normalisation and GEMMs made exact."""

import numpy as np
import pytest

import octet
from _bounds import assert_within, f64, gemm_bound
from _oracle import EPS32, backend_params, current_scale, decode, encode

BACKENDS = backend_params()


@pytest.fixture(params=BACKENDS)
def ctx(request):
    with octet.Context(request.param) as c:
        yield c


def make_linear(ctx, rng, in_f, out_f, **options):
    layer = octet.Linear(ctx, in_f, out_f, **options)
    w = (rng.standard_normal((out_f, in_f)) / np.sqrt(in_f)).astype(np.float32)
    layer.set_parameter("weight", w)
    b = None
    if "bias" in layer.parameter_names:
        b = rng.standard_normal(out_f).astype(np.float32)
        layer.set_parameter("bias", b)
    return layer, w, b


def test_linear_high_precision_forward_and_backward(ctx):
    rng = np.random.default_rng(10)
    layer, w, b = make_linear(ctx, rng, 24, 16)
    assert layer.parameter_names == ("weight", "bias")
    x = rng.standard_normal((2, 5, 24)).astype(np.float32)  # leading dims are rows
    assert np.array_equal(layer.get_parameter("weight"), w)
    y = layer.forward(x)
    assert y.shape == (2, 5, 16) and y.dtype == np.float32
    want = f64(x) @ f64(w).T + f64(b)
    assert_within(y, want, gemm_bound(f64(x), f64(w).T, 2 * EPS32 * np.abs(f64(b))), "y")

    y2, saved = layer.forward(x, training=True)
    assert np.array_equal(y, y2)
    dy = rng.standard_normal((2, 5, 16)).astype(np.float32)
    dx = layer.backward(saved, dy)
    assert saved.consumed
    rows_x, rows_dy = f64(x).reshape(10, 24), f64(dy).reshape(10, 16)
    assert_within(dx, f64(dy) @ f64(w), gemm_bound(f64(dy), f64(w)), "dx")
    assert_within(layer.get_gradient("weight"), rows_dy.T @ rows_x, gemm_bound(rows_dy.T, rows_x), "dW")
    assert_within(layer.get_gradient("bias"), rows_dy.sum(0), 12 * EPS32 * np.abs(rows_dy).sum(0), "db")

    # accumulate=True adds to the gradients; grad_input=False skips dx.
    _, saved = layer.forward(x, training=True)
    assert layer.backward(saved, dy, accumulate=True, grad_input=False) is None
    assert_within(layer.get_gradient("bias"), 2 * rows_dy.sum(0), 24 * EPS32 * np.abs(rows_dy).sum(0), "2 db")


def test_linear_tensors_in_and_out_and_bf16_parameters(ctx):
    rng = np.random.default_rng(11)
    layer, w, b = make_linear(ctx, rng, 32, 8, params_dtype="bf16", bias=False)
    assert layer.parameter_names == ("weight",)
    x = rng.standard_normal((6, 32)).astype(np.float32)
    xt = ctx.convert(x, octet.BF16)
    y = layer.forward(xt)
    assert isinstance(y, octet.Tensor) and y.dtype == octet.BF16 and y.shape == (6, 8)
    # Reference on the BF16-rounded operands; the output is rounded to BF16.
    xb = f64(ctx.convert(xt, octet.FP32).numpy())
    wb = f64(layer.get_parameter("weight"))
    assert np.max(np.abs(wb - w)) <= 2.0**-8 * np.max(np.abs(w))
    want = xb @ wb.T
    assert_within(ctx.convert(y, octet.FP32).numpy(), want, gemm_bound(xb, wb.T, 2.0**-8 * np.abs(want)), "y")
    assert np.array_equal(layer.forward(x), ctx.convert(y, octet.FP32).numpy())  # float arrays are converted


def fp8_linear_reference(x, w, b, dy):
    """The FP8 data flow of numerics.md/layers.md with HYBRID current scaling:
    x, W in E4M3, dy in E5M2, each with scale = fp8_max / amax."""
    sx, sw = current_scale(np.abs(x).max(), octet.E4M3), current_scale(np.abs(w).max(), octet.E4M3)
    sdy = current_scale(np.abs(dy).max(), octet.E5M2)
    qx, qw = decode(encode(x * sx, octet.E4M3), octet.E4M3), decode(encode(w * sw, octet.E4M3), octet.E4M3)
    qdy = decode(encode(dy * sdy, octet.E5M2), octet.E5M2)
    inv = {k: f64(np.float32(1.0) / s) for k, s in (("x", sx), ("w", sw), ("dy", sdy))}
    y = (qx @ qw.T) * (inv["x"] * inv["w"]) + f64(b)
    dx = (qdy @ qw) * (inv["dy"] * inv["w"])
    dw = (qdy.T @ qx) * (inv["dy"] * inv["x"])
    bounds = {
        "y": gemm_bound(qx, qw.T) * inv["x"] * inv["w"] + 4 * EPS32 * np.abs(y) + EPS32 * np.abs(f64(b)),
        "dx": gemm_bound(qdy, qw) * inv["dy"] * inv["w"] + 4 * EPS32 * np.abs(dx),
        "dW": gemm_bound(qdy.T, qx) * inv["dy"] * inv["x"] + 4 * EPS32 * np.abs(dw),
    }
    return (sx, sw, sdy), y, dx, dw, bounds


def test_linear_fp8_current_scaling_forward_and_backward(ctx):
    rng = np.random.default_rng(12)
    layer, w, b = make_linear(ctx, rng, 48, 24, recipe=octet.CurrentScaling())
    x = rng.standard_normal((20, 48)).astype(np.float32)
    dy = rng.standard_normal((20, 24)).astype(np.float32)
    (sx, sw, sdy), y_ref, dx_ref, dw_ref, bounds = fp8_linear_reference(x, w, b, dy)
    y, saved = layer.forward(x, training=True)
    dx = layer.backward(saved, dy)
    assert layer.quantizer("input").info().scale == sx
    assert layer.quantizer("weight").info().scale == sw
    assert layer.quantizer("gradient").info().scale == sdy
    assert_within(y, y_ref, bounds["y"], "y")
    assert_within(dx, dx_ref, bounds["dx"], "dx")
    assert_within(layer.get_gradient("weight"), dw_ref, bounds["dW"], "dW")
    assert_within(layer.get_gradient("bias"), f64(dy).sum(0), 22 * EPS32 * np.abs(f64(dy)).sum(0), "db")
    # FP8 is far from FP32 here: the test would notice a high-precision run.
    assert np.max(np.abs(f64(y) - (f64(x) @ f64(w).T + b))) > 1e3 * np.max(bounds["y"])


def test_linear_under_autocast_updates_the_delayed_scales_at_the_scope_end(ctx):
    rng = np.random.default_rng(13)
    layer, w, b = make_linear(ctx, rng, 16, 8)
    x = rng.standard_normal((4, 16)).astype(np.float32)
    dy = rng.standard_normal((4, 8)).astype(np.float32)
    recipe = octet.DelayedScaling(amax_history_len=2)
    with ctx.autocast(recipe):
        y, saved = layer.forward(x, training=True)
        layer.backward(saved, dy)
        assert layer.quantizer("input").info().scale == 1.0  # first step: scale 1
    # Scale 1: the forward multiplied the plain E4M3 codes of x and W.
    qx, qw = decode(encode(x, octet.E4M3), octet.E4M3), decode(encode(w, octet.E4M3), octet.E4M3)
    assert_within(y, qx @ qw.T + b, gemm_bound(qx, qw.T, 2 * EPS32 * np.abs(f64(b)) + 4 * EPS32 * np.abs(qx @ qw.T)),
                  "y")
    expected = {"input": (np.abs(x).max(), 448.0), "weight": (np.abs(w).max(), 448.0),
                "gradient": (np.abs(dy).max(), 57344.0)}
    for role, (amax, fp8_max) in expected.items():
        info = layer.quantizer(role).info()
        assert (info.scale, info.update_count) == (np.float32(fp8_max) / np.float32(amax), 1), role
        assert layer.quantizer(role).amax_history().tolist() == [0.0, np.float32(amax)], role
    checkpoint = layer.quantizer("input").save()
    fresh = octet.Quantizer(octet.DelayedScaling(amax_history_len=2), "input")
    fresh.load(checkpoint)
    assert fresh.info().scale == layer.quantizer("input").info().scale


def layernorm(x, g, beta, eps, kind):
    x = f64(x)
    if kind == "layernorm":
        mean = x.mean(-1, keepdims=True)
        rstd = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
        xhat = (x - mean) * rstd
        out = xhat * f64(g) + f64(beta)
        spread = np.abs(x).max(-1, keepdims=True) * rstd + np.abs(xhat)  # what mean/var rounding can move
    else:
        rstd = 1 / np.sqrt((x**2).mean(-1, keepdims=True) + eps)
        xhat = x * rstd
        out = xhat * f64(g)
        spread = np.abs(xhat)
    cols = x.shape[-1]
    err = (cols + 8) * EPS32 * (spread * np.abs(f64(g)) + (np.abs(f64(beta)) if beta is not None else 0))
    return out, err


def gelu_tanh(v):
    """docs/layers.md / octet_backend.h: GELU, tanh form."""
    return 0.5 * v * (1.0 + np.tanh(0.7978845608 * (v + 0.044715 * v**3)))


def fill(layer, rng, scale=1.0):
    values = {}
    for name in layer.parameter_names:
        shape = layer.parameter(name).shape
        fan_in = shape[-1] if len(shape) == 2 else 1
        v = (rng.standard_normal(shape) * (scale / np.sqrt(fan_in))).astype(np.float32)
        if name == "norm_weight":
            v = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        layer.set_parameter(name, v)
        values[name] = v
    return values


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_layernorm_linear_forward(ctx, norm):
    rng = np.random.default_rng(14)
    layer = octet.LayerNormLinear(ctx, 40, 12, norm=norm, epsilon=1e-3)
    want_names = ("norm_weight", "norm_bias", "weight", "bias") if norm == "layernorm" else \
        ("norm_weight", "weight", "bias")
    assert layer.parameter_names == want_names
    p = fill(layer, rng)
    x = (rng.standard_normal((7, 40)) * 3 + 1).astype(np.float32)
    y = layer.forward(x)
    ln, ln_err = layernorm(x, p["norm_weight"], p.get("norm_bias"), np.float32(1e-3), norm)
    want = ln @ f64(p["weight"]).T + f64(p["bias"])
    bound = gemm_bound(ln, f64(p["weight"]).T, 2 * EPS32 * np.abs(f64(p["bias"]))) + ln_err @ np.abs(f64(p["weight"])).T
    assert_within(y, want, bound, "y")


@pytest.mark.parametrize("activation", ["gelu", "swiglu"])
def test_layernorm_mlp_forward(ctx, activation):
    rng = np.random.default_rng(15)
    layer = octet.LayerNormMLP(ctx, 32, 20, activation=activation)
    assert layer.parameter_names == ("norm_weight", "norm_bias", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias")
    assert layer.parameter("fc1_weight").shape == ((40 if activation == "swiglu" else 20), 32)
    p = fill(layer, rng, scale=2.0)
    x = rng.standard_normal((3, 2, 32)).astype(np.float32)
    y = layer.forward(x)
    assert y.shape == (3, 2, 32)
    ln, ln_err = layernorm(x, p["norm_weight"], p["norm_bias"], np.float32(1e-5), "layernorm")
    w1, b1, w2, b2 = (f64(p[n]) for n in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"))
    h = ln @ w1.T + b1
    h_err = gemm_bound(ln, w1.T, 2 * EPS32 * np.abs(b1)) + ln_err @ np.abs(w1).T
    if activation == "gelu":
        act = gelu_tanh(h)
        # |gelu'| < 1.13; tanhf and the few FP32 operations: 16 ulps.
        act_err = 1.2 * h_err + 16 * EPS32 * (np.abs(act) + np.abs(h))
    else:
        a, b = np.split(h, 2, axis=-1)
        ea, eb = np.split(h_err, 2, axis=-1)
        s = 1 / (1 + np.exp(-a))
        act = a * s * b
        act_err = 1.1 * np.abs(b) * ea + np.abs(a * s) * eb + 16 * EPS32 * (np.abs(act) + np.abs(a * b))
    want = act @ w2.T + b2
    bound = gemm_bound(act, w2.T, 2 * EPS32 * np.abs(b2)) + act_err @ np.abs(w2).T
    assert_within(y, want, bound, "y")


def test_lent_weight_and_fp8_only_weights():
    rng = np.random.default_rng(16)
    with octet.Context("reference") as ctx:
        layer = octet.Linear(ctx, 8, 4, bias=False, skip_weight_allocation=True)
        x = rng.standard_normal((3, 8)).astype(np.float32)
        with pytest.raises(octet.OctetError):
            layer.forward(x)  # no weight lent yet
        w = rng.standard_normal((4, 8)).astype(np.float32)
        layer.set_weight("weight", ctx.tensor(w))
        assert_within(layer.forward(x), f64(x) @ f64(w).T, gemm_bound(f64(x), f64(w).T), "lent")

        recipe = octet.CurrentScaling()
        inference = octet.Linear(ctx, 8, 4, bias=False, weight_storage="fp8_only", recipe=recipe)
        inference.load_weight("weight", w)
        stored = inference.parameter("weight")
        assert stored.dtype == octet.E4M3
        sw = current_scale(np.abs(w).max(), octet.E4M3)
        assert np.array_equal(stored.codes(), encode(w * sw, octet.E4M3))
        with pytest.raises(octet.OctetError):
            inference.forward(x, training=True)
        y = inference.forward(x)
        sx = current_scale(np.abs(x).max(), octet.E4M3)
        qx, qw = decode(encode(x * sx, octet.E4M3), octet.E4M3), decode(stored.codes(), octet.E4M3)
        inv = f64(np.float32(1) / sx) * f64(np.float32(1) / sw)
        want = qx @ qw.T * inv
        assert_within(y, want, gemm_bound(qx, qw.T) * inv + 4 * EPS32 * np.abs(want), "fp8-only")
        with pytest.raises(octet.OctetError):
            octet.Linear(ctx, 8, 4, weight_storage="fp8_only")  # needs a recipe


def test_bad_layer_arguments():
    with octet.Context("reference") as ctx:
        with pytest.raises(ValueError, match="in_features"):
            octet.Linear(ctx, 0, 4)
        with pytest.raises(TypeError, match="unknown layer option"):
            octet.LayerNormLinear(ctx, 4, 4, biass=True)
        with pytest.raises(ValueError, match="norm"):
            octet.LayerNormLinear(ctx, 4, 4, norm="batchnorm")
        with pytest.raises(ValueError, match="params_dtype"):
            octet.Linear(ctx, 4, 4, params_dtype=octet.FP16)
        with pytest.raises(TypeError, match="Context"):
            octet.Linear("reference", 4, 4)
        with pytest.raises(TypeError, match="Recipe"):
            octet.Linear(ctx, 4, 4, recipe="delayed")
        with pytest.raises(octet.OctetError) as err:
            octet.LayerNormLinear(ctx, 4, 4, save_original_input=True)  # refused by the library
        assert err.value.status_name == "OCTET_STATUS_INVALID_ARGUMENT"
        layer = octet.Linear(ctx, 4, 3)
        with pytest.raises(ValueError, match=r"\[\.\.\., 4\]"):
            layer.forward(np.ones((2, 5), np.float32))
        # integer arrays and lists are numbers: converted like float arrays (issue 13)
        want = layer.forward(np.ones((2, 4), np.float32))
        assert np.array_equal(layer.forward(np.ones((2, 4), np.int32)), want)
        assert np.array_equal(layer.forward([[1.0, 1.0, 1.0, 1.0]] * 2), want)
        with pytest.raises(TypeError, match="real numbers"):
            layer.forward(np.ones((2, 4), np.complex64))
        with pytest.raises(TypeError, match="real numbers"):
            layer.forward([["a", "b", "c", "d"]])
        with pytest.raises(ValueError, match="fp32"):
            layer.forward(ctx.convert(np.ones((2, 4), np.float32), octet.BF16))
        with pytest.raises(KeyError, match="weight, bias"):
            layer.parameter("gamma")
        with pytest.raises(ValueError, match="shape"):
            layer.set_parameter("weight", np.ones((4, 3), np.float32))
        with pytest.raises(ValueError, match="role"):
            layer.quantizer("output")
        y, saved = layer.forward(np.ones((2, 4), np.float32), training=True)
        with pytest.raises(ValueError, match="shape"):
            layer.backward(saved, np.ones((2, 4), np.float32))
        layer.backward(saved, np.ones((2, 3), np.float32))
        with pytest.raises(ValueError, match="consumed"):
            layer.backward(saved, np.ones((2, 3), np.float32))
        other = octet.Linear(ctx, 4, 3)
        _, saved = other.forward(np.ones((2, 4), np.float32), training=True)
        with pytest.raises(ValueError, match="another layer"):
            layer.backward(saved, np.ones((2, 3), np.float32))
        saved.close()
        weight = layer.parameter("weight")
        quantizer = layer.quantizer("input")
        layer.close()
        with pytest.raises(ValueError, match="closed"):
            weight.numpy()
        with pytest.raises(ValueError, match="closed"):
            quantizer.info()


@pytest.mark.parametrize("activation", ["gelu", "swiglu"])
def test_layernorm_mlp_activation_is_the_documented_formula(ctx, activation):
    # norm_weight = norm_bias = 0 makes the normalised input exactly 0, so
    # FC1's output is exactly fc1_bias; FC2 selects one activation per
    # output. What remains is the activation's FP32 rounding: a few ulps,
    # far below the 1e-4 that separates the tanh form from erf's GELU.
    ffn = 20
    layer = octet.LayerNormMLP(ctx, 32, ffn, activation=activation)
    width = 2 * ffn if activation == "swiglu" else ffn
    h = np.linspace(-4.0, 4.0, width).astype(np.float32)
    select = np.zeros((32, ffn), np.float32)
    select[np.arange(ffn), np.arange(ffn)] = 1.0
    for name, value in [("norm_weight", np.zeros(32)), ("norm_bias", np.zeros(32)),
                        ("fc1_weight", np.ones((width, 32))), ("fc1_bias", h), ("fc2_weight", select),
                        ("fc2_bias", np.zeros(32))]:
        layer.set_parameter(name, np.asarray(value, np.float32))
    y = layer.forward(np.random.default_rng(17).standard_normal((3, 32)).astype(np.float32))
    v = f64(h)
    if activation == "gelu":
        want, scale = gelu_tanh(v), np.abs(v)
    else:
        a, b = v[:ffn], v[ffn:]
        want, scale = a / (1 + np.exp(-a)) * b, np.abs(a * b)
    assert np.all(y[:, ffn:] == 0)
    assert_within(y[:, :ffn], np.broadcast_to(want, (3, ffn)), 16 * EPS32 * (np.abs(want) + scale), activation)
