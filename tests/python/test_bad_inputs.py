"""Wrong input to the package's public API raises a Python exception that
names the argument and the rule (TypeError/ValueError before the C call,
OctetError from the library): never an AttributeError or ctypes error from
inside the package, never a value silently truncated or wrapped on its way
into a C field, never a read of memory the caller closed."""

import struct

import numpy as np
import pytest

import octet


@pytest.fixture
def ctx():
    with octet.Context("reference") as c:
        yield c


def x32(rows=8, cols=32, seed=0):
    return np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32)


# -- contexts -------------------------------------------------------------------

def test_context_backend_none_means_auto_and_a_non_string_is_refused():
    with octet.Context(None) as c:  # NULL in C: the best available backend
        assert c.info()["available"]
    with pytest.raises(TypeError, match="backend must be a backend name"):
        octet.Context(5)
    with pytest.raises(ValueError, match="profile must be one of"):
        octet.Context("reference", profile=1)


# -- integers that ctypes would truncate ----------------------------------------

def test_integers_too_large_for_their_c_field_are_refused(ctx):
    # int32_t amax_history_len: 2**32 + 16 used to reach the library as 16.
    with pytest.raises(ValueError, match="amax_history_len must fit in a 32-bit signed integer"):
        octet.DelayedScaling(amax_history_len=2**32 + 16)
    with pytest.raises(ValueError, match="interval must fit"):
        octet.DelayedScaling(interval=2**33)
    # int64_t in_features: 2**64 + 4 used to become 4.
    with pytest.raises(ValueError, match="in_features must be a positive integer"):
        octet.Linear(ctx, 2**64 + 4, 4)
    # int64_t shape: 2**64 + 3 used to become 3; 2.5 used to become 2.
    with pytest.raises(ValueError, match="does not fit in a 64-bit signed integer"):
        ctx.empty((2**64 + 3,), octet.FP32)
    with pytest.raises(TypeError, match="shape must be a sequence of integers"):
        ctx.empty((2.5,), octet.FP32)
    assert ctx.empty((np.int64(3),), octet.FP32).shape == (3,)
    # size_t linear index: 2**64 used to become 0 (FC1's quantizer).
    layer = octet.Linear(ctx, 4, 4)
    with pytest.raises(ValueError, match="linear must be 0 or 1"):
        layer.quantizer("input", 2**64)


def test_raw_codes_out_of_range_are_refused_not_wrapped(ctx):
    with pytest.raises(ValueError, match=r"must be in \[0, 255\]"):
        ctx.tensor(np.array([300, 1]), dtype=octet.E4M3)  # was stored as 44
    with pytest.raises(ValueError, match=r"must be in \[0, 65535\]"):
        ctx.tensor(np.array([-1]), dtype=octet.BF16)
    assert ctx.tensor(np.array([1, 255]), dtype=octet.E4M3).codes().tolist() == [1, 255]
    with pytest.raises(ValueError, match=r"codes must be in \[0, 255\]"):
        octet.fp8_decode([300], octet.E4M3)
    with pytest.raises(TypeError, match="codes must be integers"):
        octet.fp8_decode([1.7], octet.E4M3)  # was decoded as code 1
    assert octet.fp8_decode([0x38, 0xB8], octet.E4M3).tolist() == [1.0, -1.0]
    assert octet.fp8_decode([], octet.E4M3).shape == (0,)


def test_aligned_empty_refuses_negative_and_fractional_dimensions():
    with pytest.raises(ValueError, match="negative"):
        octet.aligned_empty((-2,))
    with pytest.raises(TypeError, match="sequence of integers"):
        octet.aligned_empty((2.5,))


# -- wrong types reach no ctypes call ---------------------------------------------

def test_wrong_types_raise_type_error(ctx):
    x = x32()
    q = ctx.quantize(x, scale=4.0)
    with pytest.raises(TypeError, match="dequantize takes a quantized octet Tensor"):
        ctx.dequantize(x)
    with pytest.raises(TypeError, match="dequantize takes"):
        ctx.dequantize(None)
    with pytest.raises(TypeError, match="out must be an octet Tensor"):
        ctx.gemm(x, x32(4), out=np.zeros((8, 4), np.float32))
    with pytest.raises(TypeError, match="component must be one of"):
        q.component("data")
    with pytest.raises(TypeError, match="component must be one of"):
        q.component(None)
    with pytest.raises(TypeError, match="dtype must be an Octet dtype"):
        octet.fp8_encode([1.0], "e4m3")
    with pytest.raises(TypeError, match="dtype must be an Octet dtype"):
        octet.fp8_decode([0], None)
    with pytest.raises(TypeError, match="dtype must be an Octet dtype"):
        ctx.empty((2,), "fp32")


def test_a_scale_that_is_not_finite_and_positive_is_refused(ctx):
    x = x32()
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="scale must be finite and > 0"):
            ctx.quantize(x, scale=bad)
    q = ctx.empty((2, 2), octet.E4M3, usages=octet.ROWWISE)
    with pytest.raises(TypeError, match="scale must be a number"):
        q.set_scale("2")
    q.set_scale(np.float32(2))
    assert q.component(octet.SCALE) == 2.0


def test_a_negative_amax_is_refused_and_nan_is_ignored():
    q = octet.Quantizer(octet.DelayedScaling(amax_history_len=2), "input")
    q.record_amax(4.0)
    q.record_amax(float("nan"))
    assert q.info().amax == 4.0
    with pytest.raises(octet.OctetError, match="argument 'amax' .* is negative"):
        q.record_amax(-1.0)
    assert q.info().amax == 4.0


def test_a_checkpoint_with_an_impossible_scale_is_refused():
    q = octet.Quantizer(octet.DelayedScaling(amax_history_len=2), "input")
    saved = bytearray(q.save())
    saved[40:44] = struct.pack("<f", -2.0)  # the scale (docs/recipes.md)
    checksum = 2166136261
    for byte in saved[:-4]:  # FNV-1a 32-bit over every byte before it
        checksum = ((checksum ^ byte) * 16777619) & 0xFFFFFFFF
    saved[-4:] = struct.pack("<I", checksum)
    with pytest.raises(octet.OctetError, match="scale .* is not finite and > 0"):
        q.load(bytes(saved))
    assert q.info().scale == 1.0


# -- tensors the library still reads are not freed by close() -----------------------

def test_close_of_a_weight_lent_to_a_layer_waits_for_the_layer(ctx):
    rng = np.random.default_rng(3)
    x, w = x32(seed=4), rng.standard_normal((4, 32)).astype(np.float32)
    layer = octet.Linear(ctx, 32, 4, skip_weight_allocation=True, bias=False)
    weight = ctx.tensor(w)
    layer.set_weight("weight", weight)
    weight.close()  # the layer still reads it: released when the layer lets go
    with pytest.raises(ValueError, match="tensor is closed"):
        weight.numpy()
    # Memory freed by the close would now be reused by these.
    junk = [ctx.tensor(np.full((4, 32), 7.0, np.float32)) for _ in range(16)]
    y, saved = layer.forward(x, training=True)
    np.testing.assert_allclose(y, x @ w.T, rtol=1e-5, atol=1e-4)
    replacement = ctx.tensor(w * 2)
    layer.set_weight("weight", replacement)  # the saved forward still holds the first weight
    junk += [ctx.tensor(np.full((4, 32), 7.0, np.float32)) for _ in range(16)]
    dx = layer.backward(saved, np.ones_like(y))
    np.testing.assert_allclose(dx, np.ones((8, 4), np.float32) @ w, rtol=1e-5, atol=1e-4)
    layer.close()
    replacement.close()
    assert weight._deferred is None and weight._pins == 0  # released by now


def test_close_of_an_input_a_training_forward_keeps_waits_for_backward(ctx):
    x = x32(seed=5)
    layer = octet.Linear(ctx, 32, 4, save_original_input=True)
    layer.set_parameter("weight", np.ones((4, 32), np.float32))
    layer.set_parameter("bias", np.zeros(4, np.float32))
    xt = ctx.tensor(x)
    y, saved = layer.forward(xt, training=True)
    xt.close()
    junk = [ctx.tensor(np.full((8, 32), 7.0, np.float32)) for _ in range(16)]
    dy = y.numpy()
    layer.backward(saved, y)
    np.testing.assert_allclose(layer.get_gradient("weight"), dy.T @ x, rtol=1e-5, atol=1e-4)
    assert xt._deferred is None and xt._pins == 0
    del junk
