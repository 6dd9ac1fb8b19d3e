"""GroupedLinear (docs/grouped_linear.md): each expert's rows against an
independent float64 model per expert within numerics.md's GEMM bound (high
precision; FP8 current scaling with the test's own encoder), every recipe
expert by expert bit for bit against a Linear holding that expert's
parameters, ragged and empty splits, shared quantizers, checkpoints,
autocast, the refusals, and octet.moe's routing against a loop."""

import ctypes

import numpy as np
import pytest

import octet
from octet import _lib
from _bounds import assert_within, f64, gemm_bound
from _oracle import EPS32, backend_params, current_scale, decode, encode, registered

BACKENDS = backend_params() + [
    pytest.param("kokkos", marks=pytest.mark.skipif(not registered("kokkos"), reason="the kokkos backend is not "
                                                    "registered (build with -DOCTET_WITH_KOKKOS=ON)")),
]
# Ragged, with empty experts, none a multiple of 16 or 32.
SPLITS = [5, 0, 37, 1, 21, 0]
G, K, N = len(SPLITS), 40, 24

RECIPES = {
    "delayed": lambda: octet.DelayedScaling(),
    "current": lambda: octet.CurrentScaling(),
    "static": lambda: octet.StaticScaling(scale=4.0),
    "mxfp8": lambda: octet.MXFP8Scaling(),
    "block": lambda: octet.BlockScaling(),
    "rowwise": lambda: octet.RowwiseScaling(),
    "mxfp4": lambda: octet.MXFP4Scaling(),
    "nvfp4": lambda: octet.NVFP4Scaling(stochastic_rounding=False),
}
FP4 = ("mxfp4", "nvfp4")


@pytest.fixture(params=BACKENDS)
def ctx(request):
    with octet.Context(request.param) as c:
        yield c


def offsets(splits):
    return np.concatenate([[0], np.cumsum(splits)]).astype(int)


def make(ctx, rng, **options):
    layer = octet.GroupedLinear(ctx, G, K, N, **options)
    ws, bs = [], []
    for g in range(G):
        w = (rng.standard_normal((N, K)) / np.sqrt(K) * (1 + g)).astype(np.float32)  # experts' ranges differ
        b = rng.standard_normal(N).astype(np.float32)
        layer.set_parameter(f"weight{g}", w)
        layer.set_parameter(f"bias{g}", b)
        ws.append(w)
        bs.append(b)
    return layer, ws, bs


def test_parameters_are_named_per_expert(ctx):
    layer = octet.GroupedLinear(ctx, 3, 8, 4, seed=0)
    assert layer.parameter_names == ("weight0", "bias0", "weight1", "bias1", "weight2", "bias2")
    assert layer.parameter("weight2").shape == (4, 8)
    # reset_parameters draws every expert as torch.nn.Linear does (bound 1/sqrt(in))
    assert 0 < np.abs(layer.get_parameter("weight1")).max() <= 1 / np.sqrt(8)
    assert not np.array_equal(layer.get_parameter("weight0"), layer.get_parameter("weight1"))


def test_high_precision_against_float64_per_expert(ctx):
    rng = np.random.default_rng(1)
    layer, ws, bs = make(ctx, rng)
    T = sum(SPLITS)
    x = rng.standard_normal((T, K)).astype(np.float32)
    dy = rng.standard_normal((T, N)).astype(np.float32)
    y, saved = layer.forward(x, SPLITS, training=True)
    dx = layer.backward(saved, dy)
    o = offsets(SPLITS)
    for g in range(G):
        rows = slice(o[g], o[g + 1])
        xg, dyg, w = f64(x[rows]), f64(dy[rows]), f64(ws[g])
        assert_within(y[rows], xg @ w.T + bs[g], gemm_bound(xg, w.T, 2 * EPS32 * np.abs(f64(bs[g]))), f"y{g}")
        assert_within(dx[rows], dyg @ w, gemm_bound(dyg, w), f"dx{g}")
        # an empty expert's gradients are zero (the empty sums)
        assert_within(layer.get_gradient(f"weight{g}"), dyg.T @ xg, gemm_bound(dyg.T, xg), f"dW{g}")
        assert_within(layer.get_gradient(f"bias{g}"), dyg.sum(0), (len(dyg) + 2) * EPS32 * np.abs(dyg).sum(0),
                      f"db{g}")
    assert not np.any(layer.get_gradient("weight1"))


def test_fp8_current_scaling_against_the_oracle_per_expert(ctx):
    """Each expert's own quantizers: its rows and its weight are scaled by
    their own amaxes (numerics.md 14.1), quantized by the test's encoder."""
    rng = np.random.default_rng(2)
    layer, ws, bs = make(ctx, rng, recipe=octet.CurrentScaling())
    T = sum(SPLITS)
    x = (rng.standard_normal((T, K)) * np.repeat(np.arange(1, G + 1), SPLITS)[:, None]).astype(np.float32)
    dy = rng.standard_normal((T, N)).astype(np.float32)
    y, saved = layer.forward(x, SPLITS, training=True)
    dx = layer.backward(saved, dy)
    o = offsets(SPLITS)
    E4, E5 = octet.E4M3, octet.E5M2
    for g in range(G):
        if SPLITS[g] == 0:
            continue
        rows = slice(o[g], o[g + 1])
        xg, w, dyg = x[rows], ws[g], dy[rows]
        sx, sw, sdy = (current_scale(np.abs(xg).max(), E4), current_scale(np.abs(w).max(), E4),
                       current_scale(np.abs(dyg).max(), E5))
        assert layer.quantizer("input", g).info().scale == sx
        assert layer.quantizer("weight", g).info().scale == sw
        assert layer.quantizer("gradient", g).info().scale == sdy
        qx, qw, qdy = decode(encode(xg * sx, E4), E4), decode(encode(w * sw, E4), E4), decode(encode(dyg * sdy, E5), E5)
        ix, iw, idy = (f64(np.float32(1) / s) for s in (sx, sw, sdy))
        want_y = (qx @ qw.T) * ix * iw + f64(bs[g])
        assert_within(y[rows], want_y, gemm_bound(qx, qw.T) * ix * iw + 4 * EPS32 * np.abs(want_y)
                      + EPS32 * np.abs(f64(bs[g])), f"y{g}")
        want_dx = (qdy @ qw) * idy * iw
        assert_within(dx[rows], want_dx, gemm_bound(qdy, qw) * idy * iw + 4 * EPS32 * np.abs(want_dx), f"dx{g}")
        want_dw = (qdy.T @ qx) * idy * ix
        assert_within(layer.get_gradient(f"weight{g}"), want_dw,
                      gemm_bound(qdy.T, qx) * idy * ix + 4 * EPS32 * np.abs(want_dw), f"dW{g}")
    # FP8 is far from FP32 here: a high-precision run would be noticed
    assert np.max(np.abs(f64(y[o[0]:o[1]]) - (f64(x[o[0]:o[1]]) @ f64(ws[0]).T + bs[0]))) > 1e-3


@pytest.mark.parametrize("name", list(RECIPES))
def test_every_recipe_each_expert_is_a_linear_on_its_rows(ctx, name):
    """Expert g of a GroupedLinear gives bit for bit what a Linear with its
    parameters gives on its rows (forward, dgrad, wgrad, bias gradient),
    over two steps (delayed scaling's history moves)."""
    if name in FP4 and not ctx.info()["features"] & (1 << 19):  # OCTET_FEATURE_FP4_GEMM
        pytest.skip(f"{ctx.info()['name']} has no FP4 GEMM (it does not store E2M1)")
    rng = np.random.default_rng(3)
    splits = [33, 0, 64, 7, 1, 17]
    o = offsets(splits)
    grouped, ws, bs = make(ctx, rng, recipe=RECIPES[name]())
    linears = []
    for g in range(G):
        lin = octet.Linear(ctx, K, N, recipe=RECIPES[name]())
        lin.set_parameter("weight", ws[g])
        lin.set_parameter("bias", bs[g])
        linears.append(lin)
    for step in range(2):
        x = rng.standard_normal((o[-1], K)).astype(np.float32)
        dy = rng.standard_normal((o[-1], N)).astype(np.float32)
        y, saved = grouped.forward(x, splits, training=True)
        dx = grouped.backward(saved, dy)
        for g, lin in enumerate(linears):
            if splits[g] == 0:
                continue
            rows = slice(o[g], o[g + 1])
            yl, sl = lin.forward(x[rows], training=True)
            dxl = lin.backward(sl, dy[rows])
            assert np.array_equal(y[rows], yl), f"{name} step {step} expert {g}: y"
            assert np.array_equal(dx[rows], dxl), f"{name} step {step} expert {g}: dx"
            assert np.array_equal(grouped.get_gradient(f"weight{g}"), lin.get_gradient("weight")), f"dW{g}"
            assert np.array_equal(grouped.get_gradient(f"bias{g}"), lin.get_gradient("bias")), f"db{g}"
            assert grouped.quantizer("input", g).info().scale == lin.quantizer("input").info().scale
        # within reach of float64 too (FP8's error, far below the output's size)
        want = np.concatenate([f64(x[o[g]:o[g + 1]]) @ f64(ws[g]).T + bs[g] for g in range(G)])
        assert np.linalg.norm(f64(y) - want) < 0.25 * np.linalg.norm(want)


def test_shared_quantizers_record_the_max_over_experts(ctx):
    rng = np.random.default_rng(4)
    layer, ws, bs = make(ctx, rng, recipe=octet.DelayedScaling(amax_history_len=4), shared_quantizers=True)
    q = layer.quantizer("input", 0)
    assert all(layer.quantizer("input", g).info() == q.info() for g in range(G))
    x = (rng.standard_normal((sum(SPLITS), K)) * np.repeat(np.arange(1, G + 1), SPLITS)[:, None]).astype(np.float32)
    layer.forward(x, SPLITS)
    assert layer.quantizer("input", 3).amax_history()[0] == np.abs(x).max()
    # the experts that had rows (an expert with none quantizes nothing)
    ran = [np.abs(w).max() for w, m in zip(ws, SPLITS) if m]
    assert layer.quantizer("weight", 5).amax_history()[0] == max(ran) < max(np.abs(w).max() for w in ws)
    own, _, _ = make(ctx, np.random.default_rng(4), recipe=octet.DelayedScaling(amax_history_len=4))
    own.forward(x, SPLITS)
    o = offsets(SPLITS)
    assert own.quantizer("input", 2).amax_history()[0] == np.abs(x[o[2]:o[3]]).max()
    assert own.quantizer("input", 1).amax_history()[0] == 0  # no rows: nothing recorded


def test_accumulate_keeps_an_empty_experts_gradient(ctx):
    rng = np.random.default_rng(5)
    layer, ws, bs = make(ctx, rng)
    T = sum(SPLITS)
    x, dy = rng.standard_normal((T, K)).astype(np.float32), rng.standard_normal((T, N)).astype(np.float32)
    full = [T // G] * (G - 1) + [T - (T // G) * (G - 1)]
    _, saved = layer.forward(x, full, training=True)
    layer.backward(saved, dy)
    before = layer.get_gradient("weight1").copy()
    _, saved = layer.forward(x, SPLITS, training=True)
    layer.backward(saved, dy, accumulate=True)
    assert np.array_equal(layer.get_gradient("weight1"), before)  # expert 1 had no rows this time


def test_autocast_and_checkpoints(ctx):
    rng = np.random.default_rng(6)
    layer, ws, bs = make(ctx, rng)
    x = rng.standard_normal((sum(SPLITS), K)).astype(np.float32)
    hp = layer.forward(x, SPLITS)
    with ctx.autocast(octet.CurrentScaling()):
        fp8 = layer.forward(x, SPLITS)
    assert not np.array_equal(hp, fp8)
    assert layer.quantizer("weight", 4).info().scale == current_scale(np.abs(ws[4]).max(), octet.E4M3)
    # each expert's quantizer checkpoint loads into another layer's expert
    delayed = octet.GroupedLinear(ctx, G, K, N, recipe=octet.DelayedScaling(), seed=1)
    delayed.forward(x, SPLITS)
    other = octet.GroupedLinear(ctx, G, K, N, recipe=octet.DelayedScaling(), seed=1)
    for g in range(G):
        other.quantizer("input", g).load(delayed.quantizer("input", g).save())
        assert other.quantizer("input", g).info() == delayed.quantizer("input", g).info()


def test_memory_is_accounted(ctx):
    before = ctx.memory_stats()
    layer = octet.GroupedLinear(ctx, 8, 64, 32, seed=0)
    grew = ctx.memory_stats()["parameters"]["current"] - before["parameters"]["current"]
    assert grew >= 8 * (64 * 32 + 32) * 4
    layer.close()


def test_refusals_name_the_rule(ctx):
    layer = octet.GroupedLinear(ctx, 3, 8, 4, seed=0)
    x = np.ones((6, 8), np.float32)
    with pytest.raises(octet.OctetError, match="add up to 5 but the input has 6 rows"):
        layer.forward(x, [1, 2, 2])
    with pytest.raises(octet.OctetError, match=r"splits\[1\] \(-1\) must be >= 0"):
        layer.forward(x, [5, -1, 2])
    with pytest.raises(ValueError, match="num_groups"):
        layer.forward(x, [6, 0])
    with pytest.raises(TypeError, match="integers"):
        layer.forward(x, [6.0, 0.0, 0.0])
    # the plain forward refuses a grouped layer, and the grouped one any other
    y = ctx.empty((6, 4), octet.FP32)
    xt = ctx.from_dlpack(x)
    assert _lib.lib.octet_layer_forward(layer.handle, xt.handle, y.handle, 0, None) != 0
    assert "forward it with octet_layer_forward_grouped" in _lib.lib.octet_last_error_message().decode()
    lin = octet.Linear(ctx, 8, 4, seed=0)
    splits = (ctypes.c_int64 * 1)(6)
    assert _lib.lib.octet_layer_forward_grouped(lin.handle, xt.handle, 1, splits, y.handle, 0, None) != 0
    assert "takes a GroupedLinear layer" in _lib.lib.octet_last_error_message().decode()
    with pytest.raises(octet.OctetError, match="save_original_input does not apply"):
        octet.GroupedLinear(ctx, 2, 8, 4, save_original_input=True)
    with pytest.raises(ValueError, match="num_groups must be a positive integer"):
        octet.GroupedLinear(ctx, 0, 8, 4)
    o = _lib.GroupedLinearOptions()  # the library's own check, past Python's
    lo = _lib.LinearOptions()
    _lib.lib.octet_linear_options_init(ctypes.byref(lo))
    lo.in_features, lo.out_features = 8, 4
    _lib.lib.octet_grouped_linear_options_init(ctypes.byref(o))
    o.linear = ctypes.pointer(lo)
    handle = ctypes.c_void_p()
    assert _lib.lib.octet_layer_create_grouped_linear(ctx.handle, ctypes.byref(o), ctypes.byref(handle)) != 0
    assert "options->num_groups (0) must be in [1, 65536]" in _lib.lib.octet_last_error_message().decode()


def test_moe_routing_matches_a_loop():
    rng = np.random.default_rng(7)
    tokens, k, experts = 50, 2, 6
    index = np.stack([rng.choice(experts, k, replace=False) for _ in range(tokens)])
    probs = rng.random((tokens, k)).astype(np.float32)
    order, splits = octet.moe.sort_by_expert(index, experts)
    assert splits.tolist() == [int((index == e).sum()) for e in range(experts)]
    x = rng.standard_normal((tokens, 5)).astype(np.float32)
    xs = octet.moe.permute(x, order, k)
    # expert by expert, tokens in order
    at = 0
    for e in range(experts):
        mine = [t for t in range(tokens) for j in range(k) if index[t, j] == e]
        assert np.array_equal(xs[at:at + len(mine)], x[mine])
        at += len(mine)
    want = np.zeros_like(x, dtype=np.float64)
    for i, slot in enumerate(order):
        want[slot // k] += probs.reshape(-1)[slot] * f64(xs[i])
    assert np.allclose(octet.moe.unpermute(xs, order, k, probs), want, rtol=1e-6, atol=1e-6)
    assert np.allclose(octet.moe.unpermute(xs, order, k), k * x, rtol=1e-6)  # probs 1: each token k times
    with pytest.raises(ValueError, match=r"outside \[0, 6\)"):
        octet.moe.sort_by_expert(np.array([[0, 6]]), experts)
    with pytest.raises(TypeError, match="integers"):
        octet.moe.sort_by_expert(np.array([0.5]), experts)
    with pytest.raises(ValueError, match="order must be"):
        octet.moe.permute(x, order[:-1], k)
