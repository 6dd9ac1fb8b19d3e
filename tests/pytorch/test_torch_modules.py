"""octet.torch: the torch.nn.Modules over Octet's layers (docs/pytorch.md).

Expectations come from torch itself (torch.nn.Linear, torch.nn.functional
in float64) or from an independent quantizing model written here with
torch's float8 casts; bounds are stated where they are used."""

import copy
import io
import os
import pathlib
import re
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
import octet  # noqa: E402
import octet.torch as ot  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
U = 2.0**-24  # FP32 unit roundoff
F = torch.nn.functional


def _layer_backends():
    """The reference, and the cpu backend where it is built (it has every
    layer kernel)."""
    names = ["reference"]
    for b in octet.backends():
        if b["name"] == "cpu" and b["available"]:
            names.append("cpu")
    return names


@pytest.fixture(scope="module", params=_layer_backends())
def ctx(request):
    return octet.Context(request.param)


def _gamma_bound(k, x, w, b=None):
    """(k + 1) u (|x| |W|^T + |b|): the forward error bound of an FP32 dot
    product of length k plus the bias, in any summation order (Higham 3.1)."""
    s = x.double().abs() @ w.double().abs().T
    if b is not None:
        s = s + b.double().abs()
    return (k + 1) * U * s


def _params(m):
    return {n: p.detach().clone() for n, p in m.named_parameters()}


def test_importing_octet_does_not_import_torch():
    code = "import sys, octet; assert 'torch' not in sys.modules, 'octet imported torch'; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize("shape", [(7, 12), (2, 3, 40)])
def test_linear_fp32_matches_torch_nn_linear_within_fp32_rounding(ctx, shape):
    """Both results lie within (K+1) u (|x||W|^T + |b|) of the exact value
    (any summation order), so they differ by at most twice that; gradients
    likewise with the length of their sums (M rows for dW, N for dx)."""
    k, n = shape[-1], 9
    m = ot.Linear(k, n, context=ctx, seed=3)
    ref = torch.nn.Linear(k, n)
    ref.load_state_dict(_params(m))
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1), requires_grad=True)
    xr = x.detach().clone().requires_grad_()
    y, yr = m(x), ref(xr)
    x2 = x.detach().reshape(-1, k)
    assert ((y - yr).abs().reshape(-1, n).double() <= 2 * _gamma_bound(k, x2, m.weight, m.bias)).all()
    dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(2))
    y.backward(dy)
    yr.backward(dy)
    dy2 = dy.reshape(-1, n)
    rows = dy2.shape[0]
    assert ((x.grad - xr.grad).abs().reshape(-1, k).double()
            <= 2 * (n + 1) * U * (dy2.double().abs() @ m.weight.detach().double().abs())).all()
    assert ((m.weight.grad - ref.weight.grad).abs().double()
            <= 2 * (rows + 1) * U * (dy2.double().abs().T @ x2.double().abs())).all()
    assert ((m.bias.grad - ref.bias.grad).abs().double() <= 2 * (rows + 1) * U * dy2.double().abs().sum(0)).all()


def _layer_norm(x, w, b, norm, eps):
    if norm == "rmsnorm":
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def _reference(kind, activation, p, x):
    """The module's formula with torch (p: parameters by name)."""
    norm = "rmsnorm" if "norm_bias" not in p else "layernorm"
    h = _layer_norm(x, p["norm_weight"], p.get("norm_bias"), norm, 1e-5)
    if kind is ot.LayerNormLinear:
        return F.linear(h, p["weight"], p["bias"])
    a = F.linear(h, p["fc1_weight"], p["fc1_bias"])
    if activation == "swiglu":
        f = a.shape[-1] // 2
        a = F.silu(a[..., :f]) * a[..., f:]
    else:
        a = F.gelu(a, approximate="tanh")
    return F.linear(a, p["fc2_weight"], p["fc2_bias"])


FUSED = [
    (ot.LayerNormLinear, dict(norm="layernorm")),
    (ot.LayerNormLinear, dict(norm="rmsnorm")),
    (ot.LayerNormMLP, dict(activation="gelu")),
    (ot.LayerNormMLP, dict(activation="swiglu", norm="rmsnorm")),
]


@pytest.mark.parametrize("cls,kw", FUSED)
def test_fused_modules_fp32_match_torch_in_float64(ctx, cls, kw):
    """Forward and every gradient against torch autograd of the same formula
    in float64. Tolerance: 1e-4 relative to the largest magnitude (the FP32
    results carry norm, activation and sum roundings of a few u times the
    sum lengths, 16..24 here, far below it; a wrong formula is off by O(1))."""
    m = cls(16, 24, context=ctx, seed=5, **kw)
    x = torch.randn(6, 16, generator=torch.Generator().manual_seed(4)) * 3 + 1
    x.requires_grad_()
    y = m(x)
    dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(6))
    y.backward(dy)
    xd = x.detach().double().requires_grad_()
    p64 = {n: p.detach().double().requires_grad_() for n, p in m.named_parameters()}
    yd = _reference(cls, kw.get("activation"), p64, xd)
    yd.backward(dy.double())

    def close(a, b):
        return (a.double() - b).abs().max().item() <= 1e-4 * max(b.abs().max().item(), 1.0)
    assert close(y, yd)
    assert close(x.grad, xd.grad)
    for n, p in m.named_parameters():
        assert close(p.grad, p64[n].grad), n


GRADCHECK = [
    (ot.Linear, dict()),
    (ot.LayerNormLinear, dict(norm="layernorm")),
    (ot.LayerNormMLP, dict(activation="gelu")),
    (ot.LayerNormMLP, dict(activation="swiglu", norm="rmsnorm")),
]


@pytest.mark.parametrize("cls,kw", GRADCHECK)
def test_gradcheck_in_fp32(ctx, cls, kw):
    """torch.autograd.gradcheck of the input and every parameter. Octet's
    layers have FP32 and BF16 parameters, no FP64, so this runs in FP32:
    central differences with eps = 1e-2 on O(1) data (truncation error
    ~eps^2 = 1e-4 for the curved norm/activation parts, rounding ~u/eps =
    6e-6), compared with atol = rtol = 5e-3 (a wrong gradient is off by
    O(1)). gradcheck perturbs the Parameters in place: that is the layer's
    own memory, which the next forward reads."""
    m = cls(4, 6, context=ctx, seed=7, **kw)
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(8)).requires_grad_()
    params = [p for _, p in m.named_parameters()]

    def fn(x, *params):
        return m(x)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*double precision.*")
        assert torch.autograd.gradcheck(fn, (x, *params), eps=1e-2, atol=5e-3, rtol=5e-3)


def test_gradcheck_fails_on_a_wrong_gradient(ctx):
    """The tolerance above is tight enough to see a gradient off by 5%."""
    m = ot.Linear(4, 6, context=ctx, seed=7)
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(8)).requires_grad_()

    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(c, t):
            return t.clone()

        @staticmethod
        def backward(c, g):
            return g * 1.05

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*double precision.*")
        assert not torch.autograd.gradcheck(lambda x: m(Scaled.apply(x)), (x,), eps=1e-2, atol=5e-3, rtol=5e-3,
                                            raise_exception=False)


def _quantize(t, fp8_max, dtype):
    """Current scaling as numerics.md 14.1 and 7 state it, with torch's casts
    as the encoder: scale = fp8_max / amax in FP32, codes = fp8(t * scale)
    (round to nearest even; nothing exceeds fp8_max), scale_inv = 1 / scale."""
    scale = torch.tensor(fp8_max, dtype=torch.float32) / t.abs().max().float()
    codes = (t.float() * scale).clamp(-fp8_max, fp8_max).to(dtype)
    return codes, scale, torch.tensor(1.0, dtype=torch.float32) / scale


def _fp8_gemm_check(got, a, sa_inv, b, sb_inv, bias=None):
    """got = (a b^T) * (sa_inv * sb_inv) (+ bias) within numerics.md
    section 8's bound: k 2^-23 sum_k |a b| |sa sb|, plus one rounding each
    of the scaling, the bias addition and the output (2^-23 of the result)."""
    k = a.shape[1]
    acc = a.double() @ b.double().T
    scale = (sa_inv * sb_inv).double()  # the FP32 product the GEMM multiplies by
    want = acc * scale + (bias.double() if bias is not None else 0)
    bound = k * 2.0**-23 * (a.double().abs() @ b.double().abs().T) * scale \
        + 2.0**-23 * (want.abs() + (bias.double().abs() if bias is not None else 0))
    err = (got.double() - want).abs()
    assert (err <= bound).all(), f"worst ratio {(err / bound).max().item()}"
    return want


def test_linear_fp8_matches_an_exact_quantizing_model(ctx):
    """CurrentScaling (HYBRID: E4M3 x and W, E5M2 dy): y, dx and dW against
    GEMMs of codes made by torch.float8_e4m3fn / float8_e5m2 casts with the
    scales computed here; db is the FP32 column sum of the unquantized dy."""
    recipe = octet.CurrentScaling()
    assert recipe.tensor_format("gradient")[0] == octet.E5M2
    m = ot.Linear(48, 20, context=ctx, seed=11)
    g = torch.Generator().manual_seed(12)
    x = (torch.randn(33, 48, generator=g) * torch.logspace(0, -3, 48)).requires_grad_()
    dy = torch.randn(33, 20, generator=g)
    with ot.autocast(recipe, context=ctx):
        y = m(x)
        y.backward(dy)
    xq, sx, sx_inv = _quantize(x.detach(), 448.0, torch.float8_e4m3fn)
    wq, sw, sw_inv = _quantize(m.weight.detach(), 448.0, torch.float8_e4m3fn)
    dyq, sd, sd_inv = _quantize(dy, 57344.0, torch.float8_e5m2)
    layer = m.octet_layer
    assert layer.quantizer("input").info().scale == sx.item()
    assert layer.quantizer("weight").info().scale == sw.item()
    assert layer.quantizer("gradient").info().scale == sd.item()
    _fp8_gemm_check(y.detach(), xq.float(), sx_inv, wq.float(), sw_inv, m.bias.detach())
    _fp8_gemm_check(x.grad, dyq.float(), sd_inv, wq.float().T, sw_inv)
    _fp8_gemm_check(m.weight.grad, dyq.float().T, sd_inv, xq.float().T, sx_inv)
    assert ((m.bias.grad.double() - dy.double().sum(0)).abs() <= 34 * U * dy.double().abs().sum(0)).all()
    # and FP8 is not FP32: the quantization shows
    assert (y.detach() - F.linear(x.detach(), m.weight.detach(), m.bias.detach())).abs().max() > 1e-4


def test_the_exact_model_tells_a_wrong_scale(ctx):
    """The check above fails for a result 2^-12 off (its bound here is
    16 * 2^-23 relative to the sum of |products|)."""
    g = torch.Generator().manual_seed(13)
    a, b = torch.randn(8, 16, generator=g), torch.randn(4, 16, generator=g)
    aq, _, a_inv = _quantize(a, 448.0, torch.float8_e4m3fn)
    bq, _, b_inv = _quantize(b, 448.0, torch.float8_e4m3fn)
    got = (aq.double() @ bq.double().T * (a_inv * b_inv).double()).float()
    _fp8_gemm_check(got, aq.float(), a_inv, bq.float(), b_inv)
    with pytest.raises(AssertionError):
        _fp8_gemm_check(got * (1 + 2.0**-12), aq.float(), a_inv, bq.float(), b_inv)


def test_state_dict_round_trip_restores_identical_outputs(ctx):
    """After training steps under delayed scaling (scales from the amax
    history), a new module loaded from the state_dict (through torch.save
    and torch.load(weights_only=True)) gives the same bits, forward and
    backward, under the same recipe; the quantizers' scales and histories match."""
    recipe = octet.DelayedScaling(amax_history_len=4)
    g = torch.Generator().manual_seed(14)
    a = ot.LayerNormMLP(16, 32, context=ctx, seed=1)
    opt = torch.optim.SGD(a.parameters(), lr=0.05)
    for _ in range(3):
        opt.zero_grad()
        with ot.autocast(recipe, context=ctx):
            a(torch.randn(8, 16, generator=g)).square().mean().backward()
        opt.step()
    buffer = io.BytesIO()
    torch.save(a.state_dict(), buffer)
    buffer.seek(0)
    b = ot.LayerNormMLP(16, 32, context=ctx, seed=2)
    b.load_state_dict(torch.load(buffer, weights_only=True))
    for linear in (0, 1):
        for role in ("input", "weight", "gradient"):
            qa, qb = a.octet_layer.quantizer(role, linear), b.octet_layer.quantizer(role, linear)
            ia, ib = qa.info(), qb.info()  # (a loaded quantizer takes its recipe kind at its next use)
            assert (ia.scale, ia.scale_inv, ia.update_count) == (ib.scale, ib.scale_inv, ib.update_count)
            assert (qa.amax_history() == qb.amax_history()).all() and ia.update_count == 3
    x = torch.randn(8, 16, generator=g)
    outs = []
    a.zero_grad()
    for m in (a, b):
        xi = x.clone().requires_grad_()
        with ot.autocast(recipe, context=ctx):
            y = m(xi)
            y.square().sum().backward()
        outs.append((y.detach(), xi.grad, [p.grad for p in m.parameters()]))
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
    assert all(torch.equal(p, q) for p, q in zip(outs[0][2], outs[1][2]))
    b2 = ot.LayerNormMLP(16, 32, context=ctx, seed=2)  # without the quantizer state the FP8 output differs
    b2.load_state_dict(dict(a.state_dict()))  # a plain dict: no _metadata, so no quantizer state
    with ot.autocast(recipe, context=ctx):
        assert not torch.equal(b2(x), outs[0][0])


def test_the_optimizer_step_is_what_the_next_forward_reads(ctx):
    """The layer reads the weight Parameter's own memory: after opt.step()
    (in place) the module computes with the new values; a Parameter whose
    .data was replaced (also by another dtype) is what the next forward
    reads."""
    m = ot.Linear(8, 4, context=ctx, seed=0)
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(1))
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    m(x).sum().backward()
    before = m.weight.detach().clone()
    opt.step()
    assert not torch.equal(m.weight.detach(), before)
    with torch.no_grad():
        assert torch.allclose(m(x), F.linear(x, m.weight, m.bias), rtol=0, atol=1e-5)
        lent = torch.from_dlpack(m.octet_layer.parameter("weight"))
        assert lent.data_ptr() == m.weight.data_ptr()  # borrowed, not copied
    w = torch.randn(4, 8)
    m.weight.data = w.clone()
    m.bias.data.fill_(0.25)  # through .data: no version counter moves
    with torch.no_grad():
        assert torch.allclose(m(x), F.linear(x, w, m.bias), rtol=0, atol=1e-5)
    assert torch.equal(torch.from_dlpack(m.octet_layer.parameter("weight")), w)
    m.weight.data = torch.randn(4, 8, dtype=torch.float64)
    with torch.no_grad():  # converted to FP32 for Octet at each forward
        y = m(x)
        assert y.dtype == torch.float32
        assert torch.allclose(y, F.linear(x, m.weight.float(), m.bias), rtol=0, atol=1e-5)


def test_the_weight_cache_follows_the_optimizer(ctx):
    """weight_cache=True keeps the FP8 weight between forwards until
    new_step(); the module calls it when a weight changed in place, so the
    next forward quantizes the new values (a module whose cache went stale
    would give the old output)."""
    x = torch.randn(6, 16, generator=torch.Generator().manual_seed(5))
    recipe = octet.CurrentScaling()
    cached = ot.Linear(16, 8, context=ctx, seed=0, weight_cache=True)
    with ot.autocast(recipe, context=ctx), torch.no_grad():
        before = cached(x)
        cached.weight.mul_(-0.5)
        after = cached(x)
        fresh = ot.Linear(16, 8, context=ctx, seed=1)
        fresh.load_state_dict(cached.state_dict())
        assert not torch.equal(before, after)
        assert torch.equal(after, fresh(x))


def test_the_weight_cache_follows_an_optimizer_step_on_another_tensor(ctx):
    """FSDP2's way: the optimizer steps the sharded weight, and the next
    all-gather writes the new values into the gathered weight keeping its
    version counter and its address. Any optimizer step makes the cached
    FP8 weight stale, so the next forward reads the new values (a cache
    keyed on the version counter alone gave the old output); forwards
    without a step in between keep the cache."""
    x = torch.randn(6, 16, generator=torch.Generator().manual_seed(5))
    recipe = octet.CurrentScaling()
    cached = ot.Linear(16, 8, context=ctx, seed=0, weight_cache=True)
    shard = torch.nn.Parameter(cached.weight.detach().clone())
    opt = torch.optim.SGD([shard], lr=1.0)
    with ot.autocast(recipe, context=ctx):
        before = cached(x)
        shard.grad = torch.full_like(shard, 0.25)
        opt.step()
        with torch.no_grad(), torch.autograd._unsafe_preserve_version_counter(cached.weight):
            address = cached.weight.data_ptr()
            cached.weight.copy_(shard)  # the gather: same version, same address
            assert cached.weight.data_ptr() == address
        after = cached(x)
        fresh = ot.Linear(16, 8, context=ctx, seed=1)
        fresh.load_state_dict(cached.state_dict())
        assert not torch.equal(before, after)
        assert torch.equal(after, fresh(x))
        with torch.no_grad(), torch.autograd._unsafe_preserve_version_counter(cached.weight):
            cached.weight.mul_(2.0)  # no optimizer step: the cache holds (the contract)
        assert torch.equal(cached(x), after)


def test_bf16_linear_runs_in_bf16(ctx):
    """dtype=torch.bfloat16: BF16 parameters, input and output; the result
    within BF16 rounding (2^-8 relative, plus the FP32 sum) of FP32 math on
    the same BF16 values."""
    m = ot.Linear(16, 8, dtype=torch.bfloat16, context=ctx, seed=0)
    assert m.weight.dtype == torch.bfloat16
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(2)).bfloat16().requires_grad_()
    y = m(x)
    assert y.dtype == torch.bfloat16
    want = F.linear(x.detach().float(), m.weight.detach().float(), m.bias.detach().float())
    bound = 2.0**-8 * want.abs() + 2 * _gamma_bound(16, x.detach().float(), m.weight.detach().float(),
                                                    m.bias.detach().float())
    assert ((y.detach().float() - want).abs().double() <= bound).all()
    y.float().sum().backward()
    assert x.grad.dtype == torch.bfloat16 and m.weight.grad.dtype == torch.bfloat16


def test_bad_input_is_refused_naming_the_rule(ctx):
    m = ot.Linear(16, 4, context=ctx, seed=0)
    with pytest.raises(ValueError, match=r"shape \[\.\.\., 16\]; got \[3, 15\]"):
        m(torch.randn(3, 15))
    with pytest.raises(ValueError, match="the input is on meta, the parameters on cpu"):
        m(torch.empty(3, 16, device="meta"))
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        m([[0.0] * 16])
    with pytest.raises(TypeError, match="must be a floating tensor"):
        m(torch.ones(3, 16, dtype=torch.int32))
    with pytest.raises(TypeError, match="unknown option"):
        ot.Linear(4, 4, context=ctx, weight_storage="fp8_only")
    with pytest.raises(TypeError, match="dtype must be a floating torch dtype"):
        ot.Linear(4, 4, context=ctx, dtype=torch.int8)
    with pytest.raises(TypeError, match="needs an octet Recipe"):
        ot.autocast("fp8")
    other = octet.Context("reference")
    with pytest.raises(ValueError, match="another octet Context"):
        with ot.autocast(octet.CurrentScaling(), context=other):
            m(torch.randn(3, 16))


def test_a_second_backward_through_the_graph_gives_the_same_gradients(ctx):
    """retain_graph=True: the first backward consumed Octet's saved handle;
    the second runs the forward again from the kept input (same bits in
    FP32)."""
    m = ot.LayerNormLinear(8, 4, context=ctx, seed=0)
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(3)).requires_grad_()
    y = m(x)
    (g1,) = torch.autograd.grad(y.sum(), x, retain_graph=True)
    (g2,) = torch.autograd.grad(y.sum(), x)
    assert torch.equal(g1, g2)


def test_the_example_trains_an_mlp_in_fp8_and_fp32():
    """docs/examples/train_mlp_torch.py: both runs learn (the loss falls to
    under a third), and FP8 ends within 5% of FP32."""
    out = subprocess.run([sys.executable, str(REPO / "docs" / "examples" / "train_mlp_torch.py")],
                         capture_output=True, text=True, env=os.environ.copy(), timeout=600)
    assert out.returncode == 0, out.stderr
    losses = {}
    for line in out.stdout.splitlines():
        mm = re.fullmatch(r"(fp32|fp8) loss ([0-9.]+) -> ([0-9.]+)", line)
        assert mm, line
        losses[mm.group(1)] = (float(mm.group(2)), float(mm.group(3)))
    assert set(losses) == {"fp32", "fp8"}
    for first, last in losses.values():
        assert last < first / 3
    assert abs(losses["fp8"][1] - losses["fp32"][1]) <= 0.05 * losses["fp32"][1]


def test_output_gradients_that_are_views_are_taken(ctx):
    """Autograd may hand the backward an expanded dy (the gradient of a sum)
    or a view at an unaligned offset (the gradient of a torch.cat): both
    give the gradients of a plain contiguous dy."""
    m = ot.Linear(8, 3, context=ctx, seed=2)
    g = torch.Generator().manual_seed(9)
    x1, x2 = torch.randn(5, 8, generator=g), torch.randn(4, 8, generator=g)
    w = torch.randn(9, 3, generator=g)
    (torch.cat([m(x1), m(x2)]) * w).sum().backward()  # dy of m(x2) starts 5 * 3 floats in: unaligned
    got = m.weight.grad.clone()
    m.zero_grad()
    m(x1).backward(w[:5].clone())
    m(x2).backward(w[5:].clone())
    assert torch.equal(got, m.weight.grad)
    m.zero_grad()
    m(x1).sum().backward()  # an expanded dy (stride 0)
    assert torch.allclose(m.weight.grad, x1.sum(0).expand(3, 8), rtol=0, atol=1e-5)
