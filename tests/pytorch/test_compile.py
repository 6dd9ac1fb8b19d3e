"""torch.compile of models holding octet.torch modules: each module is one
node (the custom operator octet::layer_forward), no graph break, and the
compiled model computes the eager model's bits, forward and backward, in
high precision and in FP8."""

import pytest

torch = pytest.importorskip("torch")
import octet  # noqa: E402
import octet.torch as ot  # noqa: E402


def _model():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8))
    net = ot.convert(net)
    net.append(ot.LayerNormMLP(8, 16, seed=1))
    return net


def test_no_graph_break_in_the_octet_modules():
    net = _model()
    x = torch.randn(4, 16, requires_grad=True)
    explained = torch._dynamo.explain(net)(x)
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count == 1
    ops = [str(n.target) for g in explained.graphs for n in g.graph.nodes if n.op == "call_function"]
    assert sum("octet.layer_forward" in op for op in ops) == 3, ops


@pytest.mark.parametrize("recipe", [None, octet.CurrentScaling()], ids=["fp32", "fp8-current"])
def test_compiled_equals_eager_forward_and_backward(recipe):
    torch._dynamo.reset()
    eager, compiled_net = _model(), _model()
    compiled = torch.compile(compiled_net, backend="aot_eager", fullgraph=True)
    x = torch.randn(6, 16)
    results = []
    for model in (eager, compiled):
        xi = x.clone().requires_grad_()
        if recipe is None:
            y = model(xi)
            y.square().sum().backward()
        else:
            with ot.autocast(recipe):
                y = model(xi)
                y.square().sum().backward()
        results.append((y.detach(), xi.grad, [p.grad for p in (eager if model is eager else compiled_net).parameters()]))
    (y0, dx0, g0), (y1, dx1, g1) = results
    assert torch.equal(y0, y1) and torch.equal(dx0, dx1)
    assert all(torch.equal(a, b) for a, b in zip(g0, g1))


def test_compiled_inference_and_a_training_step():
    torch._dynamo.reset()
    net = _model()
    compiled = torch.compile(net, backend="aot_eager")
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    x, target = torch.randn(8, 16), torch.randn(8, 8)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        with ot.autocast(octet.DelayedScaling()):
            loss = torch.nn.functional.mse_loss(compiled(x), target)
            loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    with torch.no_grad():
        assert torch.equal(compiled(x), net(x))


def test_the_default_inductor_backend_runs_the_octet_nodes():
    """torch.compile's default backend (inductor, which compiles the
    surrounding element-wise code with the C++ compiler): the octet nodes
    stay calls, so the result differs from eager only by inductor's own
    rounding of the GELU around them (a few FP32 ulps)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    net = ot.convert(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)))
    compiled = torch.compile(net)
    x = torch.randn(4, 16, requires_grad=True)
    y = compiled(x)
    y.sum().backward()
    with torch.no_grad():
        want = net(x)
    assert (y.detach() - want).abs().max() <= 1e-6 * want.abs().max()
    assert x.grad is not None and net[0].weight.grad is not None
