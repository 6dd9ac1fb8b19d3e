"""octet_grouped_gemm (docs/grouped_gemm.md) through ctx.grouped_gemm: every
group bit for bit equal to ctx.gemm on that group's own tensors, in every
scaling mode, on backends with the grouped entry (reference, cpu) and
without it (kokkos: the core's group-by-group fallback); within the GEMM
bound of a float64 product of the dequantized operands; and the refusals."""

import numpy as np
import pytest

import octet
from _oracle import backend_params, registered

BACKENDS = backend_params() + [
    pytest.param("kokkos", marks=pytest.mark.skipif(not registered("kokkos"), reason="the kokkos backend is not "
                                                    "registered (build with -DOCTET_WITH_KOKKOS=ON)")),
]

# Ragged splits with empty groups, none a multiple of 16 or 32.
SPLITS_M = [5, 0, 37, 1, 90, 0, 13]
# Stacked block-scaled operands split along K start every group on a block
# boundary (128 covers MXFP8's 32 and 1x128's 128); the last group is ragged.
SPLITS_K_ALIGNED = [128, 0, 256, 41]


@pytest.fixture(params=BACKENDS)
def ctx(request):
    with octet.Context(request.param) as c:
        yield c


def quantizer(mode, role):
    recipes = {"per_row": octet.RowwiseScaling, "mxfp8": octet.MXFP8Scaling, "block": octet.BlockScaling,
               "mxfp4": octet.MXFP4Scaling, "nvfp4": octet.NVFP4Scaling}
    return octet.Quantizer(recipes[mode](), role)


def make(ctx, x, mode, role, usages):
    """x as the mode stores it; per-tensor modes take a fixed scale, so a
    group quantized on its own has the stacked tensor's codes."""
    if mode == "fp32":
        return ctx.tensor(x)
    if mode == "bf16":
        return ctx.convert(ctx.tensor(x), octet.BF16)
    if mode == "per_tensor":
        return ctx.quantize(x, octet.E4M3, scale=16.0, usages=usages)
    return quantizer(mode, role).quantize(ctx, x, usages=usages)


def dequantized(ctx, t, mode):
    if mode in ("fp32", "bf16"):
        return ctx.convert(t, octet.FP32).numpy().astype(np.float64)
    return ctx.dequantize(t).numpy().astype(np.float64)


def within_bound(got, a64, b64, k):
    """|got - A B^T| within numerics.md's FP32 GEMM bound, twice over."""
    want = a64 @ b64.T
    bound = 2.0 * k * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64).T) + 1e-30
    assert np.all(np.abs(got - want) <= bound), float(np.max(np.abs(got - want) - bound))


MODES = ["fp32", "bf16", "per_tensor", "per_row", "mxfp8", "block"]
# FP4 (E2M1, packed two a byte): the backend's fp4_gemm group by group; a
# stacked FP4 operand is cut along its rows only.
FP4_MODES = ["mxfp4", "nvfp4"]


def fp4_or_skip(ctx, mode):
    if mode in FP4_MODES and not ctx.info()["features"] & (1 << 19):  # OCTET_FEATURE_FP4_GEMM
        pytest.skip(f"{ctx.info()['name']} has no FP4 GEMM (it does not store E2M1)")


@pytest.mark.parametrize("mode", MODES + FP4_MODES)
def test_split_m_groups_equal_their_own_gemms(ctx, mode):
    fp4_or_skip(ctx, mode)
    rng = np.random.default_rng(11)
    k, n = 160, 72
    x = rng.standard_normal((sum(SPLITS_M), k)).astype(np.float32)
    ws = [rng.standard_normal((n, k)).astype(np.float32) for _ in SPLITS_M]
    biases = [rng.standard_normal(n).astype(np.float32) if g % 2 else None for g in range(len(SPLITS_M))]
    qx = make(ctx, x, mode, "input", octet.ROWWISE)
    if mode == "nvfp4":
        # NVFP4's tensor scale comes from the whole tensor's amax, so a group
        # quantized on its own differs from its rows of a stacked tensor:
        # one tensor per group (a zero group's is not read).
        qx = [make(ctx, x[o:o + m] if m else x[:1], mode, "input", octet.ROWWISE)
              for o, m in zip(np.cumsum([0] + SPLITS_M), SPLITS_M)]
    qws = [make(ctx, w, mode, "weight", octet.ROWWISE) for w in ws]
    got = ctx.grouped_gemm(qx, qws, SPLITS_M, bias=biases, alpha=0.5).numpy()
    assert got.shape == (sum(SPLITS_M), n)
    off = 0
    for g, m in enumerate(SPLITS_M):
        if m:
            own = make(ctx, x[off:off + m], mode, "input", octet.ROWWISE)
            want = ctx.gemm(own, qws[g], alpha=0.5, bias=biases[g]).numpy()
            assert np.array_equal(got[off:off + m].view(np.uint32), want.view(np.uint32)), f"group {g}"
        off += m
    # The same with the weights as one 3-D tensor [G, N, K] (per-tensor and
    # the row-blocked modes: a 3-D tensor is quantized as one).
    if mode in ("fp32", "per_tensor", "per_row", "mxfp8", "mxfp4"):
        stacked = make(ctx, np.stack(ws), mode, "weight", octet.ROWWISE)
        got3 = ctx.grouped_gemm(qx, stacked, SPLITS_M, bias=biases, alpha=0.5).numpy()
        off = 0
        for g, m in enumerate(SPLITS_M):
            if m:
                w_own = make(ctx, ws[g], mode, "weight", octet.ROWWISE) if mode != "per_row" else qws[g]
                own = make(ctx, x[off:off + m], mode, "input", octet.ROWWISE)
                want = ctx.gemm(own, w_own, alpha=0.5, bias=biases[g]).numpy()
                assert np.array_equal(got3[off:off + m], want), f"group {g} (3-D weights)"
            off += m


@pytest.mark.parametrize("mode", MODES + FP4_MODES)
def test_split_m_dgrad_and_the_float64_model(ctx, mode):
    fp4_or_skip(ctx, mode)
    rng = np.random.default_rng(12)
    k, n = 96, 40
    dy = rng.standard_normal((sum(SPLITS_M), n)).astype(np.float32)
    ws = [rng.standard_normal((n, k)).astype(np.float32) for _ in SPLITS_M]
    qdy = make(ctx, dy, mode, "gradient", octet.ROWWISE)
    # dX = dY W_g: W_g used transposed reads its columnwise copy.
    qws = [make(ctx, w, mode, "weight", octet.BOTH) for w in ws]
    if mode in FP4_MODES:
        # The FP4 recipes quantize a weight's columnwise copy with the
        # Hadamard transform (numerics.md section 15): each group against its
        # own octet_gemm, bit for bit (the FP4 GEMM's accuracy: test_fp4_recipes).
        offs = np.cumsum([0] + SPLITS_M)
        own = [make(ctx, dy[offs[g]:offs[g + 1]] if m else dy[:1], mode, "gradient", octet.ROWWISE)
               for g, m in enumerate(SPLITS_M)]
        got = ctx.grouped_gemm(own, qws, SPLITS_M, trans_b=True).numpy()
        for g, m in enumerate(SPLITS_M):
            if m:
                want = ctx.gemm(own[g], qws[g], trans_b=True).numpy()
                assert np.array_equal(got[offs[g]:offs[g + 1]], want), f"group {g}"
        return
    got = ctx.grouped_gemm(qdy, qws, SPLITS_M, trans_b=True).numpy()
    a64 = dequantized(ctx, qdy, mode)
    off = 0
    for g, m in enumerate(SPLITS_M):
        if m:
            w64 = dequantized(ctx, qws[g], mode)
            within_bound(got[off:off + m].astype(np.float64), a64[off:off + m], w64.T, n)
        off += m


# A stacked FP4 operand cannot be cut along K (test_a_stacked_fp4_operand_is_refused_along_k).
@pytest.mark.parametrize("mode,stacked", [(m, True) for m in MODES] + [(m, False) for m in MODES + FP4_MODES],
                         ids=[f"stacked-{m}" for m in MODES] + [f"lists-{m}" for m in MODES + FP4_MODES])
def test_split_k_wgrad_groups_equal_their_own_gemms(ctx, mode, stacked):
    fp4_or_skip(ctx, mode)
    rng = np.random.default_rng(13)
    splits = SPLITS_K_ALIGNED if stacked else [7, 0, 45, 33]
    n, k = 24, 40
    dy = rng.standard_normal((sum(splits), n)).astype(np.float32)
    x = rng.standard_normal((sum(splits), k)).astype(np.float32)
    offs = np.cumsum([0] + splits)
    own_dy = [make(ctx, dy[offs[g]:offs[g + 1]], mode, "gradient", octet.COLUMNWISE) if splits[g] else None
              for g in range(len(splits))]
    own_x = [make(ctx, x[offs[g]:offs[g + 1]], mode, "input", octet.COLUMNWISE) if splits[g] else None
             for g in range(len(splits))]
    if stacked:
        a, b = make(ctx, dy, mode, "gradient", octet.COLUMNWISE), make(ctx, x, mode, "input", octet.COLUMNWISE)
    else:
        # A zero group's tensor is not read: any tensor of the other extent does.
        filler_dy, filler_x = make(ctx, dy[:1], mode, "gradient", octet.COLUMNWISE), make(
            ctx, x[:1], mode, "input", octet.COLUMNWISE)
        a = [t if t is not None else filler_dy for t in own_dy]
        b = [t if t is not None else filler_x for t in own_x]
    d0 = rng.standard_normal((len(splits), n, k)).astype(np.float32)
    out = ctx.tensor(d0.copy())
    ctx.grouped_gemm(a, b, splits, split="k", trans_a=True, trans_b=True, beta=0.25, out=out)
    got = out.numpy()
    for g, m in enumerate(splits):
        if m == 0:
            # An empty sum: D_g = beta * D_g.
            assert np.array_equal(got[g], (np.float32(0.25) * d0[g]).astype(np.float32)), f"group {g}"
            continue
        # Per-row scales of a stacked tensor's columnwise copy span every
        # group: a group's own tensor has other scales (the model still holds).
        if not (stacked and mode == "per_row"):
            d_own = ctx.tensor(d0[g].copy())
            ctx.gemm(own_dy[g], own_x[g], trans_a=True, trans_b=True, beta=0.25, out=d_own)
            assert np.array_equal(got[g].view(np.uint32), d_own.numpy().view(np.uint32)), f"group {g}"
        if mode in FP4_MODES:
            continue  # Hadamard-transformed copies: the bits above are the contract
        a64 = dequantized(ctx, a, mode)[offs[g]:offs[g + 1]] if stacked else dequantized(ctx, own_dy[g], mode)
        b64 = dequantized(ctx, b, mode)[offs[g]:offs[g + 1]] if stacked else dequantized(ctx, own_x[g], mode)
        want = a64.T @ b64 + 0.25 * d0[g].astype(np.float64)
        bound = 2.0 * m * 2.0 ** -24 * (np.abs(a64).T @ np.abs(b64)) + 2.0 ** -23 * np.abs(want) + 1e-30
        assert np.all(np.abs(got[g] - want) <= bound), f"group {g}"


def test_a_zero_k_group_gets_beta_d_plus_bias(ctx):
    dy = np.ones((3, 4), np.float32)
    x = np.ones((3, 5), np.float32)
    d0 = np.full((2, 4, 5), 2.0, np.float32)
    out = ctx.tensor(d0.copy())
    bias = [None, np.arange(5, dtype=np.float32)]
    ctx.grouped_gemm(dy, x, [3, 0], split="k", trans_a=True, trans_b=True, beta=0.5, bias=bias, out=out)
    got = out.numpy()
    assert np.array_equal(got[0], np.full((4, 5), 3.0 + 1.0, np.float32))
    assert np.array_equal(got[1], np.tile(1.0 + np.arange(5, dtype=np.float32), (4, 1)))


def test_refusals_name_the_argument_and_the_rule(ctx):
    rng = np.random.default_rng(14)
    x = rng.standard_normal((40, 64)).astype(np.float32)
    w = [rng.standard_normal((8, 64)).astype(np.float32)] * 2
    with pytest.raises(octet.OctetError, match="splits add up to 30"):
        ctx.grouped_gemm(x, w, [10, 20])
    with pytest.raises(octet.OctetError, match="splits\\[1\\] \\(-1\\) must be >= 0"):
        ctx.grouped_gemm(x, w, [41, -1])
    with pytest.raises(ValueError, match="list of 2 tensors for 3 groups"):
        ctx.grouped_gemm(x, w, [10, 20, 10])
    with pytest.raises(octet.OctetError, match="3-D \\[2, rows, cols\\]"):
        ctx.grouped_gemm(x, w[0], [20, 20])
    with pytest.raises(octet.OctetError, match="group 1: .*inner dimensions differ"):
        ctx.grouped_gemm(x, [w[0], rng.standard_normal((8, 32)).astype(np.float32)], [20, 20])
    qd = ctx.quantize(np.zeros((40, 8), np.float32), octet.E4M3, scale=1.0)
    with pytest.raises(octet.OctetError, match="grouped GEMMs write no FP8 output"):
        ctx.grouped_gemm(x, w, [20, 20], out=qd)
    # A stacked MXFP8 operand split along K off its 32-element blocks.
    q = quantizer("mxfp8", "input").quantize(ctx, x, usages=octet.COLUMNWISE)
    dy = quantizer("mxfp8", "gradient").quantize(ctx, x[:, :8].copy(), usages=octet.COLUMNWISE)
    with pytest.raises(octet.OctetError, match="group 1: tensor 'a' starts at 20 .*block boundary"):
        ctx.grouped_gemm(dy, q, [20, 20], split="k", trans_a=True, trans_b=True)
    with pytest.raises(ValueError, match="split must be 'm' or 'k'"):
        ctx.grouped_gemm(x, w, [20, 20], split="n")


def test_the_backend_declares_its_grouped_entry(ctx):
    from octet import _abi
    has = bool(ctx.info()["features"] & _abi.FEATURE_GROUPED_GEMM)
    assert has == (ctx.info()["name"] in ("reference", "cpu"))


def test_the_example_of_docs_grouped_gemm_md_runs():
    import contextlib
    import io
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "grouped_gemm.md").read_text()
    block = re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "docs/grouped_gemm.md", "exec"), {"__name__": "__docs__"})  # noqa: S102 (our own docs)
    assert out.getvalue().strip() == "(64, 32) (64, 64) (4, 32, 64)"


def test_a_stacked_fp4_operand_is_refused_along_k(ctx):
    fp4_or_skip(ctx, "mxfp4")
    rng = np.random.default_rng(15)
    dy = quantizer("mxfp4", "gradient").quantize(ctx, rng.standard_normal((64, 32)).astype(np.float32),
                                                 usages=octet.COLUMNWISE)
    x = quantizer("mxfp4", "input").quantize(ctx, rng.standard_normal((64, 32)).astype(np.float32),
                                             usages=octet.COLUMNWISE)
    with pytest.raises(octet.OctetError, match="FP4 and stacked along K"):
        ctx.grouped_gemm(dy, x, [32, 32], split="k", trans_a=True, trans_b=True)
