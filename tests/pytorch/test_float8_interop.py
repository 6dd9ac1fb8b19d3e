"""torch float8 tensors in and out of octet (octet.torch.from_float8 /
to_float8), and FP8 checkpoints written and read by safetensors.torch.

Expectations come from torch itself: its float8 dtypes decode the codes
(codes.float()), scales multiply as Transformer Engine's and torchao's
convention says (dequantized = codes * scale_inv), and safetensors.torch
writes the checkpoint the octet loader reads and reads what it saves."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import octet  # noqa: E402
import octet.torch as ot  # noqa: E402
from octet import fp8_checkpoints  # noqa: E402

FLOAT8 = [torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz]


@pytest.fixture(scope="module")
def ctx():
    name = "cpu" if any(b["name"] == "cpu" and b["available"] for b in octet.backends()) else "reference"
    with octet.Context(name) as c:
        yield c


def codes_of(rng_seed, shape, dtype):
    """Finite float8 codes of every magnitude: random bytes, NaN (and inf)
    codes replaced."""
    generator = torch.Generator().manual_seed(rng_seed)
    raw = torch.randint(0, 256, shape, dtype=torch.uint8, generator=generator)
    codes = raw.view(dtype)
    bad = ~torch.isfinite(codes.float())
    return torch.where(bad, torch.zeros_like(raw), raw).view(dtype)


def assert_values(q, expected):
    np.testing.assert_array_equal(q.values(), expected.numpy())


@pytest.mark.parametrize("dtype", FLOAT8)
def test_per_tensor_as_transformer_engine_stores_it(ctx, dtype):
    if dtype in (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz) and not ctx.info()["dtypes"] & (1 << 11):
        pytest.skip("no FNUZ on this backend")
    data = codes_of(1, (48, 80), dtype)
    scale_inv = torch.tensor([0.0625 * 1.5], dtype=torch.float32)  # Float8Tensor._scale_inv: shape [1]
    q = ot.from_float8(data, scale_inv, context=ctx)
    assert_values(q, data.float() * scale_inv)
    # TE's _data is uint8 raw codes with the format given apart
    octet_dtype = {torch.float8_e4m3fn: octet.E4M3, torch.float8_e5m2: octet.E5M2,
                   torch.float8_e4m3fnuz: octet.E4M3FNUZ, torch.float8_e5m2fnuz: octet.E5M2FNUZ}[dtype]
    raw = ot.from_float8(data.view(torch.uint8), scale_inv, context=ctx, dtype=octet_dtype)
    assert_values(raw, data.float() * scale_inv)
    codes, back = ot.to_float8(q)
    assert codes.dtype == dtype and torch.equal(codes.view(torch.uint8), data.view(torch.uint8))
    assert back.dtype == torch.float32 and torch.equal(back, scale_inv)


def test_rowwise_as_torchao_scales_it(ctx):
    x = torch.randn(64, 96, generator=torch.Generator().manual_seed(2))
    scale_inv = x.abs().amax(dim=1, keepdim=True) / 448  # [rows, 1], dequantized = codes * scale_inv
    data = (x / scale_inv).to(torch.float8_e4m3fn)
    q = ot.from_float8(data, scale_inv, scaling_mode=octet.SCALING_PER_ROW, context=ctx)
    assert_values(q, data.float() * scale_inv)
    codes, grid = ot.to_float8(q)
    assert torch.equal(codes.view(torch.uint8), data.view(torch.uint8)) and torch.equal(grid, scale_inv)


def test_128x128_blocks_and_mxfp8(ctx):
    data = codes_of(3, (200, 300), torch.float8_e4m3fn)
    grid = torch.rand(2, 3, generator=torch.Generator().manual_seed(4)) + 0.01
    q = ot.from_float8(data, grid, scaling_mode=octet.SCALING_BLOCK_128X128, context=ctx)
    full = grid.repeat_interleave(128, 0).repeat_interleave(128, 1)[:200, :300]
    assert_values(q, data.float() * full)
    e8m0 = torch.randint(115, 135, (200, 10), dtype=torch.uint8).view(torch.float8_e8m0fnu)
    m = ot.from_float8(data, e8m0, scaling_mode=octet.SCALING_MXFP8_1X32, context=ctx)
    assert_values(m, data.float() * e8m0.float().repeat_interleave(32, 1)[:, :300])
    codes, back = ot.to_float8(m)
    assert back.dtype == torch.float8_e8m0fnu and torch.equal(back.view(torch.uint8), e8m0.view(torch.uint8))


def test_zero_copy_where_the_layout_allows(ctx):
    data = codes_of(5, (16, 64), torch.float8_e4m3fn)
    plain = ot.from_float8(data, context=ctx)  # no scale: a plain tensor over the same memory
    assert not plain.usages
    assert torch.from_dlpack(plain).data_ptr() == data.data_ptr()
    data.view(torch.uint8)[0, 0] = 0x38  # 1.0, seen through octet
    assert plain.values()[0, 0] == 1.0
    # an offset view (aligned to its one-byte elements only) is read in place too
    offset = codes_of(6, (1025,), torch.float8_e4m3fn)[1:]
    viewed = ot.from_float8(offset, context=ctx)
    assert torch.from_dlpack(viewed).data_ptr() == offset.data_ptr()
    np.testing.assert_array_equal(viewed.values(), offset.float().numpy())
    # to_float8: the codes are a view of the octet tensor's memory, the per-tensor scale_inv a copy
    q = ot.from_float8(data, torch.tensor(0.5), context=ctx)
    first, scale_inv = ot.to_float8(q)
    second, _ = ot.to_float8(q)
    assert first.data_ptr() == second.data_ptr() != data.data_ptr()
    scale_inv.fill_(4.0)
    assert q.scales()["scale_inv"] == 0.5 and q.component(octet.SCALE) == 2.0


def test_bad_input(ctx):
    with pytest.raises(TypeError, match="torch float8 tensor"):
        ot.from_float8(torch.zeros(4, 4), 1.0, context=ctx)
    with pytest.raises(TypeError, match="pass dtype="):
        ot.from_float8(torch.zeros(4, 4, dtype=torch.uint8), 1.0, context=ctx)
    with pytest.raises(ValueError, match="pass scaling_mode="):
        ot.from_float8(torch.zeros(4, 4, dtype=torch.float8_e4m3fn), torch.ones(4, 1), context=ctx)
    with pytest.raises(ValueError, match="scale_inv must be finite and > 0"):
        ot.from_float8(torch.zeros(4, 4, dtype=torch.float8_e4m3fn), torch.tensor([0.0]), context=ctx)
    with pytest.raises(ValueError, match=r"scale_inv\[2, 0\] is nan"):
        grid = torch.ones(4, 1)
        grid[2, 0] = float("nan")
        ot.from_float8(torch.zeros(4, 4, dtype=torch.float8_e4m3fn), grid, scaling_mode=octet.SCALING_PER_ROW,
                       context=ctx)
    if ctx.info()["dtypes"] & (1 << octet.E2M1):
        with pytest.raises(ValueError, match="q.parts"):
            ot.to_float8(ctx.from_codes(np.zeros((2, 4), np.uint8), octet.E2M1))


def test_checkpoint_from_safetensors_torch(ctx, tmp_path):
    st = pytest.importorskip("safetensors.torch")
    out_features, in_features = 160, 256
    weight = codes_of(7, (out_features, in_features), torch.float8_e4m3fn)
    scale_inv = torch.rand(2, 2, generator=torch.Generator().manual_seed(8)) * 0.01 + 0.001
    bias = torch.randn(out_features, generator=torch.Generator().manual_seed(9))
    path = tmp_path / "model.safetensors"
    st.save_file({"proj.weight": weight, "proj.weight_scale_inv": scale_inv, "proj.bias": bias}, str(path))
    layer = octet.Linear(ctx, in_features, out_features, weight_storage="fp8_only", recipe=octet.BlockScaling(),
                         seed=0)
    fp8_checkpoints.load_safetensors(layer, str(path), prefix="proj.")
    # inputs the 1x128 input quantizer keeps exactly: E4M3 values, one +-448 per block
    x = codes_of(10, (4, in_features), torch.float8_e4m3fn).float()
    x[:, 0], x[:, 128] = 448.0, -448.0
    dequantized = weight.double() * scale_inv.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[
        :out_features, :in_features]
    expected = x.double() @ dequantized.T + bias.double()
    bound = (in_features + 2) * 2.0**-23 * (x.double().abs() @ dequantized.abs().T) + 2.0**-22 * (
        expected.abs() + bias.double().abs())
    y = torch.from_numpy(np.asarray(layer.forward(x.numpy()))).double()
    assert bool(((y - expected).abs() <= bound).all())
    saved = tmp_path / "saved.safetensors"
    fp8_checkpoints.save_safetensors(layer, str(saved), prefix="proj.")
    back = st.load_file(str(saved))
    assert back["proj.weight"].dtype == torch.float8_e4m3fn
    assert torch.equal(back["proj.weight"].view(torch.uint8), weight.view(torch.uint8))
    assert torch.equal(back["proj.weight_scale_inv"].view(torch.int32), scale_inv.view(torch.int32))
    assert torch.equal(back["proj.bias"], bias)
