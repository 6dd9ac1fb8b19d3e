"""Context.wrap: tensors over the caller's memory without copying
(octet_tensor_wrap), on the host backends with NumPy arrays. Expectations
come from the arrays themselves (what was written on one side must be read
on the other) and from _oracle's independent FP8 encoder."""

import gc

import numpy as np
import pytest

import octet
from _oracle import backend_params, decode, encode

BACKENDS = backend_params()


@pytest.fixture(params=BACKENDS)
def ctx(request):
    with octet.Context(request.param) as c:
        yield c


def aligned(ctx, shape, dtype=np.float32):
    return octet.aligned_empty(shape, dtype, ctx.info()["alignment"])


def test_aligned_empty_is_aligned_and_contiguous():
    for alignment in (16, 64, 256):
        a = octet.aligned_empty((7, 9), np.float16, alignment)
        assert a.ctypes.data % alignment == 0
        assert a.flags.c_contiguous and a.shape == (7, 9) and a.dtype == np.float16
    with pytest.raises(ValueError, match="power of two"):
        octet.aligned_empty((2,), np.float32, 48)


def test_writes_are_seen_on_both_sides(ctx):
    a = aligned(ctx, (16, 24))
    a[:] = np.random.default_rng(1).standard_normal((16, 24), dtype=np.float32)
    t = ctx.wrap(a)
    assert t.dtype == octet.FP32 and t.shape == (16, 24)
    np.testing.assert_array_equal(t.numpy(), a)   # Octet reads the array's memory
    a[3, 5] = 1234.5
    assert t.numpy()[3, 5] == np.float32(1234.5)  # no copy was taken


def test_gemm_writes_into_a_wrapped_output(ctx):
    rng = np.random.default_rng(2)
    x = aligned(ctx, (8, 32))
    w = aligned(ctx, (4, 32))
    out = aligned(ctx, (8, 4))
    x[:] = rng.integers(-4, 5, (8, 32)).astype(np.float32)   # small integers: every sum is exact
    w[:] = rng.integers(-4, 5, (4, 32)).astype(np.float32)
    out[:] = np.nan
    result = ctx.gemm(ctx.wrap(x), ctx.wrap(w), out=ctx.wrap(out))
    np.testing.assert_array_equal(out, x @ w.T)   # in the caller's array
    np.testing.assert_array_equal(result.numpy(), x @ w.T)


def test_raw_codes_with_an_explicit_dtype(ctx):
    values = np.linspace(-3.0, 3.0, 64, dtype=np.float32).reshape(4, 16)
    codes = aligned(ctx, (4, 16), np.uint8)
    codes[:] = encode(values, octet.E4M3)
    t = ctx.wrap(codes, dtype=octet.E4M3)
    assert t.dtype == octet.E4M3
    # E4M3 -> FP32 is exact: the codes' own values
    np.testing.assert_array_equal(ctx.convert(t, octet.FP32).numpy(), decode(codes, octet.E4M3))
    bf = aligned(ctx, (2, 8), np.uint16)
    bf[:] = 0x3F80  # 1.0 in BF16
    assert ctx.wrap(bf, dtype=octet.BF16).dtype == octet.BF16


def test_the_tensor_keeps_the_memory_alive(ctx):
    a = aligned(ctx, (32,))
    a[:] = np.arange(32, dtype=np.float32)
    t = ctx.wrap(a)
    del a
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.arange(32, dtype=np.float32))


def test_bad_memory_is_refused_with_the_rule(ctx):
    a = aligned(ctx, (8, 16))
    with pytest.raises(ValueError, match="C-contiguous"):
        ctx.wrap(a[:, ::2])
    raw = aligned(ctx, (65,))
    offset = ctx.wrap(raw[1:])  # element-aligned is enough: no copy
    raw[1] = 5.0
    assert offset.numpy()[0] == 5.0 and np.from_dlpack(offset).ctypes.data == raw[1:].ctypes.data
    with pytest.raises(ValueError, match="not aligned to 4 bytes"):
        ctx.wrap(aligned(ctx, (65,), np.uint8)[1:].view(np.float32))  # no float32 is aligned there
    ro = aligned(ctx, (8,))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        ctx.wrap(ro)
    with pytest.raises(TypeError, match="cannot infer an Octet dtype"):
        ctx.wrap(aligned(ctx, (8,), np.int32))
    with pytest.raises(TypeError, match="cannot hold"):
        ctx.wrap(aligned(ctx, (8,), np.float32), dtype=octet.BF16)
    with pytest.raises(TypeError, match="__array_interface__"):
        ctx.wrap([1.0, 2.0])
    with pytest.raises(ValueError, match="dimensions"):
        ctx.wrap(aligned(ctx, (), np.float32))


class _TorchLikeStream:
    cuda_stream = 0x1234


def test_a_stream_is_accepted_as_a_handle_or_a_framework_stream_object():
    # The host backends run on the calling thread and ignore the stream.
    for stream in (None, 2, _TorchLikeStream()):
        with octet.Context("reference", stream=stream) as c:
            assert c.amax(np.array([1.0, -3.0], dtype=np.float32)) == 3.0
    with pytest.raises(ValueError, match="legacy default stream"):
        octet.Context("reference", stream=0)
    with pytest.raises(TypeError, match="stream must be"):
        octet.Context("reference", stream="s")


def test_operations_accept_numpy_arrays_directly(ctx):
    # A NumPy argument becomes a temporary tensor that must outlive the call
    # (it was freed before octet_amax ran: a use after free).
    x = np.array([[1.0, -3.5], [2.0, 0.25]], dtype=np.float32)
    assert ctx.amax(x) == 3.5
    np.testing.assert_array_equal(ctx.gemm(x, x).numpy(), x @ x.T)
