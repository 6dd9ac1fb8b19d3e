"""octet.torch.GroupedLinear and octet.moe's torch routing
(docs/grouped_linear.md): against torch.nn.Linear experts in float64 (the
GEMM bound of numerics.md section 8), FP8 under octet.torch.autocast,
gradients through a whole top-2 MoE block, checkpoints, deepcopy,
torch.compile and the refusals."""

import copy

import pytest

torch = pytest.importorskip("torch")
import octet  # noqa: E402
import octet.torch as ot  # noqa: E402

U = 2.0**-24
SPLITS = [7, 0, 19, 1, 13]
G, K, N = len(SPLITS), 24, 16


@pytest.fixture(params=["reference", "cpu"])
def ctx(request):
    if request.param == "cpu" and not any(b["name"] == "cpu" and b["available"] for b in octet.backends()):
        pytest.skip("the cpu backend is not built")
    return octet.Context(request.param)


def experts(seed=0, bias=True):
    torch.manual_seed(seed)
    return [torch.nn.Linear(K, N, bias=bias) for _ in range(G)]


def loop64(linears, x, splits):
    """The experts in float64, one torch.nn.Linear each on its rows."""
    parts = torch.split(x.double(), splits)
    return torch.cat([torch.nn.functional.linear(p, m.weight.double(), None if m.bias is None else m.bias.double())
                      for m, p in zip(linears, parts)])


def bound(linears, x, splits):
    parts = torch.split(x.double().abs(), splits)
    return torch.cat([(K + 2) * U * (p @ m.weight.double().abs().T) + 2 * U * (m.bias.double().abs() if m.bias
                                                                                 is not None else 0)
                      for m, p in zip(linears, parts)]) + 1e-30


def test_high_precision_matches_the_experts_and_their_gradients(ctx):
    linears = experts()
    module = ot.GroupedLinear.from_linears(linears, context=ctx)
    assert module.weight3 is linears[3].weight  # the very Parameters
    x = torch.randn(sum(SPLITS), K, requires_grad=True)
    y = module(x, SPLITS)
    assert ((y.double() - loop64(linears, x, SPLITS)).abs() <= bound(linears, x, SPLITS)).all()
    dy = torch.randn_like(y)
    (y * dy).sum().backward()
    x64 = x.detach().double().requires_grad_()
    ref = [torch.nn.Linear(K, N).double() for _ in range(G)]
    for r, m in zip(ref, linears):
        r.load_state_dict(m.state_dict())
    (loop64(ref, x64, SPLITS) * dy.double()).sum().backward()
    assert torch.allclose(x.grad.double(), x64.grad, rtol=1e-5, atol=1e-5)
    for g in range(G):
        assert torch.allclose(linears[g].weight.grad.double(), ref[g].weight.grad, rtol=1e-5, atol=1e-5)
        assert torch.allclose(linears[g].bias.grad.double(), ref[g].bias.grad, rtol=1e-5, atol=1e-5)
    assert not linears[1].weight.grad.any()  # expert 1 had no rows


def test_fp8_under_autocast_and_each_experts_quantizers(ctx):
    linears = experts(1)
    module = ot.GroupedLinear.from_linears(linears, context=ctx)
    x = torch.randn(sum(SPLITS), K)
    hp = module(x, SPLITS)
    with ot.autocast(octet.CurrentScaling(), context=ctx):
        fp8 = module(x, torch.tensor(SPLITS))
    want = loop64(linears, x, SPLITS)
    err = (fp8.double() - want).norm() / want.norm()
    assert 1e-4 < err < 0.1  # FP8's error: not high precision, not wrong
    assert not torch.equal(hp, fp8)
    layer = module.octet_layer
    for g in (0, 2, 4):
        assert layer.quantizer("weight", g).info().scale == pytest.approx(448.0 / linears[g].weight.abs().max().item())


def test_a_top2_moe_block_trains(ctx):
    """Router, sort, experts, combine: gradients reach the input, the router
    and every expert that got tokens, and match the same block in float64."""
    torch.manual_seed(3)
    tokens, k = 40, 2
    router = torch.nn.Linear(K, G)
    linears = experts(4)
    module = ot.GroupedLinear.from_linears(linears, context=ctx)
    x = torch.randn(tokens, K, requires_grad=True)

    def block(x, run):
        probs, index = torch.topk(torch.softmax(router(x), -1), k)
        order, splits = octet.moe.sort_by_expert(index, G)
        ys = run(octet.moe.permute(x, order, k), splits.tolist())
        return octet.moe.unpermute(ys, order, k, probs)

    y = block(x, module)
    y.square().sum().backward()
    got = [x.grad.clone(), router.weight.grad.clone()] + [m.weight.grad.clone() for m in linears]
    for p in [x, router.weight, *[m.weight for m in linears]]:
        p.grad = None
    ref = block(x, lambda xs, splits: loop64(linears, xs, splits).float())
    ref.square().sum().backward()
    want = [x.grad, router.weight.grad] + [m.weight.grad for m in linears]
    assert torch.allclose(y, ref, rtol=1e-4, atol=1e-5)
    for a, b in zip(got, want):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-4)


def test_state_dict_deepcopy_and_compile(ctx):
    module = ot.GroupedLinear(G, K, N, context=ctx, seed=0, recipe=octet.DelayedScaling())
    x = torch.randn(sum(SPLITS), K)
    y = module(x, SPLITS)
    state = module.state_dict()
    assert [k for k in state][:3] == ["weight0", "bias0", "weight1"]
    other = ot.GroupedLinear(G, K, N, context=ctx, seed=1, recipe=octet.DelayedScaling())
    other.load_state_dict(state, strict=True)
    assert other.quantizer_state().keys() == module.quantizer_state().keys()
    assert torch.equal(other(x, SPLITS), module(x, SPLITS))
    twin = copy.deepcopy(module)
    assert torch.equal(twin(x, SPLITS), module(x, SPLITS))
    compiled = torch.compile(module, backend="eager", fullgraph=True)
    assert torch.equal(compiled(x, SPLITS), module(x, SPLITS))
    assert y.shape == (sum(SPLITS), N)


def test_refusals(ctx):
    module = ot.GroupedLinear(G, K, N, context=ctx, seed=0)
    x = torch.randn(sum(SPLITS), K)
    with pytest.raises(ValueError, match="add up to the input's 40 rows"):
        module(x, [1] * G)
    with pytest.raises(ValueError, match="num_groups"):
        module(x, [40])
    with pytest.raises(TypeError, match="integers"):
        module(x, torch.tensor([8.0] * G))
    with pytest.raises(ValueError, match="the experts must agree"):
        ot.GroupedLinear.from_linears([torch.nn.Linear(4, 2), torch.nn.Linear(4, 3)])
    with pytest.raises(octet.OctetError, match="save_original_input does not apply to a GroupedLinear"):
        ot.GroupedLinear(G, K, N, context=ctx, save_original_input=True)
    with pytest.raises(TypeError, match="unknown option"):
        ot.GroupedLinear(G, K, N, context=ctx, norm="rmsnorm")
