"""octet.torch as a drop-in for torch.nn.Linear: convert / revert, shapes,
strides, dtypes and torch.autocast, .to(), deepcopy, pickling, strict
checkpoints both ways, the default backend, the precision warnings.

Expectations come from torch.nn.Linear on the same Parameters (FP32: within
the (K+1) u |x||W|^T bound of any summation order) or from the module's own
results where only the plumbing changes (bit-equal)."""

import copy
import io
import os
import pickle
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
import octet  # noqa: E402
import octet.torch as ot  # noqa: E402

F = torch.nn.functional
U = 2.0**-24


def _bound(k, x, w, b):
    return 2 * (k + 1) * U * (x.double().abs() @ w.double().abs().T + b.double().abs())


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                               torch.nn.Sequential(torch.nn.Linear(32, 32, bias=False), torch.nn.Tanh()),
                               torch.nn.Linear(32, 4))


def test_convert_swaps_every_linear_in_place_keeping_the_parameter_objects():
    net = _net()
    params = [id(p) for p in net.parameters()]
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(8, 16)
    want = net(x)
    assert ot.convert(net) is net
    kinds = [type(m) for m in net.modules() if isinstance(m, (torch.nn.Linear, ot.Linear))]
    assert kinds == [ot.Linear] * 3
    assert [id(p) for p in net.parameters()] == params  # the optimizer made before keeps working
    got = net(x)
    assert (got - want).abs().max() < 1e-5
    got.sum().backward()
    before = net[0].weight.detach().clone()
    opt.step()
    assert not torch.equal(before, net[0].weight)
    assert ot.revert(net) is net
    assert [type(m) for m in net.modules() if isinstance(m, (torch.nn.Linear, ot.Linear))] == [torch.nn.Linear] * 3
    assert [id(p) for p in net.parameters()] == params


def test_convert_takes_a_filter_a_recipe_and_a_bare_linear():
    net = ot.convert(_net(), filter=lambda name, m: m.out_features != 4)
    assert [name for name, m in net.named_modules() if isinstance(m, ot.Linear)] == ["0", "2.0"]
    net = ot.convert(_net(), recipe=octet.CurrentScaling())
    assert net[0].octet_layer.recipe is not None  # FP8 without an autocast block
    lin = torch.nn.Linear(4, 3)
    converted = ot.convert(lin)
    assert isinstance(converted, ot.Linear) and converted.weight is lin.weight
    assert isinstance(ot.revert(converted), torch.nn.Linear)
    mha = torch.nn.MultiheadAttention(8, 2)
    ot.convert(mha)
    assert type(mha.out_proj) is torch.nn.modules.linear.NonDynamicallyQuantizableLinear
    with pytest.raises(TypeError, match="filter must be callable"):
        ot.convert(_net(), filter="0")
    with pytest.raises(TypeError, match="must be a torch.nn.Module"):
        ot.convert([torch.nn.Linear(2, 2)])
    with pytest.raises(ValueError, match="LazyLinear has no shape yet"):
        ot.convert(torch.nn.Sequential(torch.nn.LazyLinear(3)))


@pytest.mark.parametrize("make", [
    lambda: torch.randn(2, 3, 5, 16),                  # any leading shape
    lambda: torch.randn(5, 16, 3).transpose(1, 2),     # strided, as hidden_states[:, 0] and transposes give
    lambda: torch.randn(4, 7, 16)[:, 0],               # BERT's pooler input
    lambda: torch.randn(49)[1:].view(3, 16),           # not 64-byte aligned
    lambda: torch.randn(16),                           # one vector
])
def test_any_shape_and_strides_as_torch_nn_linear(make):
    lin = torch.nn.Linear(16, 8)
    m = ot.convert(copy.deepcopy(lin))
    x = make().requires_grad_()
    x2 = x.detach().clone().requires_grad_()
    y, want = m(x), lin(x2)
    assert y.shape == want.shape
    assert ((y - want).abs().double() <= _bound(16, x2.detach().reshape(-1, 16), lin.weight.detach(),
                                                 lin.bias.detach()).reshape(want.shape)).all()
    y.sum().backward()
    want.sum().backward()
    assert x.grad.shape == x.shape and (x.grad - x2.grad).abs().max() < 1e-5
    assert (m.weight.grad - lin.weight.grad).abs().max() < 1e-4


def test_an_empty_batch_gives_an_empty_output_and_zero_gradients():
    m = ot.Linear(16, 8, seed=0)
    y = m(torch.randn(0, 16))
    assert y.shape == (0, 8)
    y.sum().backward()
    assert torch.equal(m.weight.grad, torch.zeros(8, 16))


def test_bf16_and_fp32_inputs_under_torch_autocast():
    """torch.autocast("cpu", bfloat16) around FP32 modules: the BF16
    activations are taken and the output is BF16, as torch.nn.Linear's;
    the layer computes as outside autocast (FP32 GEMM here) on the input
    rounded to BF16."""
    lin = torch.nn.Linear(16, 8)
    m = ot.convert(copy.deepcopy(lin))
    x = torch.randn(4, 16)
    with torch.autocast("cpu", torch.bfloat16):
        y = m(x)
        y_bf16_in = m(x.bfloat16())
        want = lin(x)
    assert y.dtype == torch.bfloat16 == want.dtype and y_bf16_in.dtype == torch.bfloat16
    exact = F.linear(x.double(), lin.weight.double(), lin.bias.double())
    assert (y.double() - exact).abs().max() <= 2.0**-8 * exact.abs().max() * 2
    assert m(x.bfloat16()).dtype == torch.bfloat16  # outside autocast: x's dtype
    with torch.autocast("cpu", torch.bfloat16), ot.autocast(octet.CurrentScaling()):
        y8 = m(x)
        y8.float().sum().backward()
    assert y8.dtype == torch.bfloat16 and m.weight.grad.dtype == torch.float32


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64, torch.float16])
def test_module_to_dtype_computes_in_that_dtype_keeping_the_quantizer_state(dtype):
    m = ot.Linear(16, 8, seed=3)
    x = torch.randn(6, 16)
    with ot.autocast(octet.DelayedScaling(amax_history_len=4)):
        for _ in range(2):
            m(x).sum().backward()
    scale = m.octet_layer.quantizer("input").info().scale
    assert m.to(dtype) is m and m.weight.dtype == dtype and m.dtype == dtype
    assert m.octet_layer.quantizer("input").info().scale == scale  # moved along with the new layer
    y = m(x.to(dtype))
    assert y.dtype == dtype
    want = F.linear(x.to(dtype).double(), m.weight.double(), m.bias.double())
    tol = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-9, torch.float64: 2.0**-20}[dtype]
    assert (y.double() - want).abs().max() <= tol * want.abs().max() * 4
    y.sum().backward()
    assert m.weight.grad.dtype == dtype
    assert m.double().float().weight.dtype == torch.float32


def test_deepcopy_gives_an_independent_module_with_the_same_state():
    m = ot.LayerNormMLP(16, 32, seed=0)
    x = torch.randn(4, 16)
    recipe = octet.DelayedScaling(amax_history_len=4)
    with ot.autocast(recipe):
        m(x).sum().backward()
    ema = copy.deepcopy(m)
    assert ema.context is m.context and ema.fc1_weight is not m.fc1_weight
    assert all(torch.equal(a, b) for a, b in zip(m.parameters(), ema.parameters()))
    with ot.autocast(recipe), torch.no_grad():
        assert torch.equal(m(x), ema(x))
        for p in ema.parameters():
            p.mul_(0.5)
        assert not torch.equal(m(x), ema(x))
    q1, q2 = m.octet_layer.quantizer("weight", 1), ema.octet_layer.quantizer("weight", 1)
    assert (q1.amax_history() == q2.amax_history()).all()


def test_pickling_round_trips_parameters_options_and_quantizers(tmp_path):
    m = ot.Linear(16, 8, seed=1, recipe=octet.DelayedScaling(amax_history_len=8, margin=1))
    x = torch.randn(3, 16)
    m(x).sum().backward()
    y = m(x)
    m2 = pickle.loads(pickle.dumps(m))
    assert torch.equal(m2(x), y)
    assert m2.octet_layer.recipe.options()["margin"] == 1
    torch.save(m, tmp_path / "m.pt")
    m3 = torch.load(tmp_path / "m.pt", weights_only=False)
    assert torch.equal(m3(x), y)
    callback = ot.Linear(4, 4, recipe=octet.DelayedScaling(amax_compute=lambda h: float(h.max())))
    with pytest.raises(TypeError, match="Python callbacks"):
        pickle.dumps(callback)


def test_state_dicts_load_strictly_both_ways_and_carry_the_quantizers(tmp_path):
    lin = torch.nn.Linear(16, 8)
    m = ot.Linear(16, 8, seed=5)
    m.load_state_dict(lin.state_dict())  # strict
    assert torch.equal(m.weight, lin.weight)
    recipe = octet.DelayedScaling(amax_history_len=4)
    x = torch.randn(5, 16)
    for _ in range(3):
        with ot.autocast(recipe):
            m(x).sum().backward()
    state = m.state_dict()
    assert set(state) == {"weight", "bias"}
    torch.nn.Linear(16, 8).load_state_dict(state)  # strict
    torch.save(state, tmp_path / "sd.pt")
    loaded = torch.load(tmp_path / "sd.pt", weights_only=True)
    fresh = ot.Linear(16, 8, seed=9)
    fresh.load_state_dict(loaded)
    with ot.autocast(recipe), torch.no_grad():
        assert torch.equal(fresh(x), m(x))  # the delayed scales came along
    net = ot.convert(_net())
    _net().load_state_dict(net.state_dict())
    net.load_state_dict(_net().state_dict())


def test_quantizer_state_as_tensors_for_safetensors(tmp_path):
    safetensors = pytest.importorskip("safetensors.torch")
    net = ot.convert(_net())
    recipe = octet.DelayedScaling(amax_history_len=4)
    x = torch.randn(4, 16)
    with ot.autocast(recipe):
        net(x).sum().backward()
    safetensors.save_file({**net.state_dict(), **{"octet." + k: v for k, v in ot.quantizer_state_dict(net).items()}},
                          tmp_path / "m.safetensors")
    tensors = safetensors.load_file(tmp_path / "m.safetensors")
    other = ot.convert(_net())
    other.load_state_dict({k: v for k, v in tensors.items() if not k.startswith("octet.")})
    ot.load_quantizer_state_dict(other, {k[6:]: v for k, v in tensors.items() if k.startswith("octet.")})
    with ot.autocast(recipe), torch.no_grad():
        assert torch.equal(other(x), net(x))
    with pytest.raises(KeyError, match="names no octet.torch module"):
        ot.load_quantizer_state_dict(other, {"7.0.input": torch.zeros(3, dtype=torch.uint8)})


def test_the_default_backend_is_set_once():
    code = ("import octet, octet.torch as ot; m = ot.Linear(4, 4); "
            "print(m.context.info()['name'], ot.default_context().info()['name']); "
            "ot.set_default_backend('reference'); print(m.context.info()['name'])")
    env = dict(os.environ, OCTET_TORCH_BACKEND="reference")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["reference", "reference", "reference"]
    env["OCTET_TORCH_BACKEND"] = "no-such-backend"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode != 0 and "OCTET_TORCH_BACKEND='no-such-backend'" in out.stderr
    m = ot.Linear(4, 4, seed=0)
    x = torch.randn(2, 4)
    y = m(x)
    previous = ot.default_context()
    try:
        ot.set_default_backend("reference")
        assert m.context.info()["name"] == "reference"
        assert (m(x) - y).abs().max() < 1e-6
    finally:
        ot.set_default_backend(previous)
    with pytest.raises(TypeError, match="backend must be"):
        ot.set_default_backend(3)


def test_static_scale_one_warns_that_small_gradients_flush_to_zero():
    """A fine-tune under static scaling (scale 1): the gradients of a mean
    loss are ~1e-4, below E5M2's smallest subnormal 2^-16 once scaled by 1,
    so most flush; the module warns once for that role, naming the counts
    and a remedy; current scaling does not warn."""
    m = ot.Linear(64, 64, seed=0)
    x = torch.randn(256, 64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            with ot.autocast(octet.StaticScaling(format="hybrid")):
                (m(x).square().mean() * 1e-3).backward()
    flagged = [w for w in caught if issubclass(w.category, ot.FP8PrecisionWarning)]
    assert len(flagged) == 1, [str(w.message) for w in caught]
    text = str(flagged[0].message)
    assert "gradient" in text and "flushed" in text and "non-zero values" in text and "scale up to" in text
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ot.autocast(octet.CurrentScaling()):
            (ot.Linear(64, 64, seed=0)(x).square().mean() * 1e-3).backward()
    assert not [w for w in caught if issubclass(w.category, ot.FP8PrecisionWarning)]
    try:
        ot.set_warning_fraction(1.0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with ot.autocast(octet.StaticScaling(format="hybrid")):
                (ot.Linear(64, 64, seed=0)(x).square().mean() * 1e-3).backward()
        assert not caught
    finally:
        ot.set_warning_fraction(None)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        ot.set_warning_fraction(2)


def test_saturation_warns_with_the_scale_that_avoids_it():
    m = ot.Linear(16, 8, seed=0)
    x = torch.randn(32, 16) * 1000  # |x| up to ~4000 > 448 at scale 1
    with pytest.warns(ot.FP8PrecisionWarning, match=r"input: .*saturated \d+ of 512 .* a scale of at most"):
        with ot.autocast(octet.StaticScaling()):
            m(x)


def test_the_fp8_all_gather_needs_each_module_s_own_per_tensor_recipe():
    with pytest.raises(ValueError, match="'0' needs its own per-tensor FP8 recipe"):
        ot.enable_fp8_all_gather(ot.convert(_net()))
    with pytest.raises(ValueError, match="per-tensor FP8 recipe"):
        ot.enable_fp8_all_gather(ot.convert(_net(), recipe=octet.MXFP8Scaling()))
    net = ot.convert(_net(), recipe=octet.CurrentScaling())
    assert ot.enable_fp8_all_gather(net) == 3
    x = torch.randn(4, 16)
    y = net(x)  # without FSDP the wrapped weights are the high-precision data
    y.sum().backward()
    assert net[0].weight.grad is not None and net[0].weight.grad.shape == (32, 16)


def _free_and_gather(weight, values, elsewhere):
    """What FSDP2 does to a gathered weight between forward and backward:
    frees its storage and gathers the same values again (no version counter
    moves); elsewhere=True holds the freed block so the new one is at
    another address. Returns the blocker (keep it alive)."""
    storage = weight.untyped_storage()
    size, before = storage.nbytes(), weight.data_ptr()
    storage.resize_(0)
    blocker = torch.full((size,), 0x7F, dtype=torch.uint8) if elsewhere else None  # overwrites what it reuses
    storage.resize_(size)
    weight.data.copy_(values)
    assert not elsewhere or weight.data_ptr() != before, "the gathered weight did not move"
    return blocker


def _history(m):
    return [list(m.octet_layer.quantizer(role).amax_history()) for role in ("input", "weight", "gradient")]


@pytest.mark.parametrize("recipe", [None, "delayed", "current"])
def test_the_backward_reads_the_weight_the_forward_read(recipe):
    """As torch.nn.Linear: a Parameter whose .data is replaced between
    forward and backward gets the gradients of the old weight (its storage
    is intact); one whose storage is freed and gathered again (FSDP2's
    way), in place or at another address, gets the same gradients and
    quantizer state as a step left alone: the saved handle reads the weight
    where it is now, and the forward is not run a second time (which would
    record the amaxes twice)."""
    lin = torch.nn.Linear(16, 8)
    x = torch.randn(4, 16)
    dy = torch.randn(4, 8)

    def step(how):
        r = {"delayed": octet.DelayedScaling(amax_history_len=4), "current": octet.CurrentScaling()}.get(recipe)
        m = ot.convert(copy.deepcopy(lin), recipe=r)
        xi = x.clone().requires_grad_()
        y = m(xi)
        w = m.weight.detach().clone()
        keep = None
        if how == "replace":
            m.weight.data = torch.randn(8, 16)
        elif how != "alone":
            keep = _free_and_gather(m.weight, w, elsewhere=how == "free, gather elsewhere")
        y.backward(dy)
        del keep
        return xi.grad, m.weight.grad, m.bias.grad, _history(m) if recipe == "delayed" else None

    want = step("alone")
    if recipe is None:
        x_ref = x.clone().requires_grad_()
        lin(x_ref).backward(dy)
        assert (want[0] - x_ref.grad).abs().max() < 1e-5
        assert (want[1] - lin.weight.grad).abs().max() < 1e-5
    for how in ("replace", "free, gather in place", "free, gather elsewhere"):
        got = step(how)
        for g, w_ in zip(got[:3], want[:3]):
            assert torch.equal(g, w_), how
        assert got[3] == want[3], how


def test_a_weight_freed_and_not_gathered_again_is_refused():
    m = ot.convert(torch.nn.Linear(16, 8))
    y = m(torch.randn(4, 16, requires_grad=True))
    storage = m.weight.untyped_storage()
    storage.resize_(0)
    with pytest.raises(RuntimeError, match="'weight' a forward read was freed and not gathered again"):
        y.sum().backward()
