"""Recipes, quantizers, autocast scopes and the communicator, against the
rules of docs/recipes.md re-implemented in _oracle.py."""

import math
import struct

import numpy as np
import pytest

import octet
from _oracle import (DelayedScalingModel, backend_params, current_scale, decode, encode, fnv1a32)

BACKENDS = backend_params()


@pytest.fixture(params=BACKENDS)
def ctx(request):
    with octet.Context(request.param) as c:
        yield c


def with_amax(rng, shape, amax):
    x = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
    x.flat[0] = 1.0
    return (x * np.float32(amax)).astype(np.float32)


def test_oracle_encoder_agrees_with_its_own_definition_at_the_edges():
    # The test's encoder, checked on the cases numerics.md section 2 names.
    assert encode(np.float32(464.0), octet.E4M3) == 0x7E
    assert encode(np.float32(1e9), octet.E4M3) == 0x7E
    assert encode(np.float32(-1e9), octet.E5M2) == 0xFB
    assert encode(np.float32(7.5 * 2.0**-9), octet.E4M3) == 0x08
    assert encode(np.float32(-1e-30), octet.E4M3) == 0x80


def test_recipe_defaults_come_from_the_library_and_tensor_formats():
    with octet.DelayedScaling() as r:
        assert r.info() == {"kind": "delayed", "format": "hybrid", "override_fprop": False,
                            "override_dgrad": False, "override_wgrad": False}
        assert r.tensor_format("input") == (octet.E4M3, octet.SCALING_PER_TENSOR)
        assert r.tensor_format(octet.ROLE_GRADIENT) == (octet.E5M2, octet.SCALING_PER_TENSOR)
        assert octet.Quantizer(r, "input").info().amax_history_len == 1024  # the C default
    assert octet.MXFP8Scaling().tensor_format("weight") == (octet.E4M3, octet.SCALING_MXFP8_1X32)
    block = octet.BlockScaling(format="hybrid")
    assert block.tensor_format("weight") == (octet.E4M3, octet.SCALING_BLOCK_128X128)
    assert block.tensor_format("gradient") == (octet.E5M2, octet.SCALING_BLOCK_1X128)
    assert octet.StaticScaling(format="e5m2", scale=2.0).tensor_format("input") == (octet.E5M2, 1)
    assert octet.DelayedScaling(override_dgrad=True).info()["override_dgrad"] is True


@pytest.mark.parametrize("role,dtype", [("input", octet.E4M3), ("gradient", octet.E5M2)])
@pytest.mark.parametrize("options", [{}, {"power_of_two_scales": True}, {"amax_epsilon": 64.0}])
def test_current_scaling_scale_and_codes(ctx, role, dtype, options):
    rng = np.random.default_rng(1)
    x = with_amax(rng, (24, 40), 37.25)
    q = octet.Quantizer(octet.CurrentScaling(**options), role)
    t = q.quantize(ctx, x)
    scale = current_scale(37.25, dtype, options.get("amax_epsilon", 0.0), options.get("power_of_two_scales", False))
    assert (t.dtype, t.shape) == (dtype, (24, 40))
    assert t.component(octet.SCALE) == scale
    assert t.component(octet.SCALE_INV) == np.float32(1.0) / scale
    assert t.component(octet.AMAX) == np.float32(37.25)
    assert np.array_equal(t.codes(), encode(x * scale, dtype))
    info = q.info()
    assert (info.scale, info.amax, info.recipe_kind) == (scale, np.float32(37.25), "current")
    # Dequantizing gives the decoded codes times scale_inv.
    want = (decode(t.codes(), dtype) * np.float64(np.float32(1.0) / scale)).astype(np.float32)
    assert np.array_equal(ctx.dequantize(t).numpy(), want)


def test_quantize_with_statistics_counts_saturation(ctx):
    x = np.array([[1.0, 2.0, 1000.0, np.nan]], np.float32)
    q = octet.Quantizer(octet.StaticScaling(format="e4m3", scale=1.0, observe=True), "input")
    t, stats = q.quantize(ctx, x, stats=True)
    assert stats["nan_count"] == 1 and stats["saturated_count"] == 1 and stats["total_count"] == 4
    assert stats["amax"] == 1000.0
    assert np.array_equal(t.codes(), encode(x, octet.E4M3))
    info = q.info()
    assert (info.observed_saturated, info.observed_total, info.saturated_fraction) == (1, 4, 0.25)


@pytest.mark.parametrize("interval,algo", [(1, "max"), (2, "max"), (1, "most_recent")])
def test_delayed_scaling_follows_the_update_rule(ctx, interval, algo):
    rng = np.random.default_rng(2)
    recipe = octet.DelayedScaling(amax_history_len=3, margin=1, interval=interval, amax_compute_algo=algo)
    q = octet.Quantizer(recipe, "input")
    model = DelayedScalingModel(3, margin=1, interval=interval, algo=algo)
    for step, amaxes in enumerate([[3.0, 5.0], [0.5], [7.0], [1.0, 0.75], [0.25], [0.125], [2.0]]):
        for amax in amaxes:
            x = with_amax(rng, (8, 16), amax)
            t = q.quantize(ctx, x)  # with the scale of the previous steps
            assert t.component(octet.SCALE) == model.scale, step
            assert np.array_equal(t.codes(), encode(x * model.scale, octet.E4M3)), step
            model.record(amax)
        assert np.array_equal(q.amax_history(), np.array(model.history, np.float32))
        q.update_scale()
        model.update()
        info = q.info()
        assert (info.scale, info.update_count) == (model.scale, model.count), step
        assert info.scale_inv == np.float32(1.0) / model.scale
        assert np.array_equal(q.amax_history(), np.array(model.history, np.float32)), step


def test_record_amax_and_set_scale():
    q = octet.Quantizer(octet.DelayedScaling(amax_history_len=2), "gradient")
    q.set_scale(4.0)
    assert (q.info().scale, q.info().scale_inv) == (4.0, 0.25)
    q.record_amax(2.0)
    q.record_amax(1.0)  # the max of the step stays
    assert q.amax_history().tolist() == [2.0, 0.0]
    q.update_scale()
    assert q.info().scale == np.float32(57344.0) / np.float32(2.0)  # gradient: E5M2


def test_save_load_round_trip_and_the_documented_layout():
    recipe = octet.DelayedScaling(amax_history_len=4)
    q = octet.Quantizer(recipe, "weight")
    for amax in (3.0, 0.5, 9.0):
        q.record_amax(amax)
        q.update_scale()
    q.record_amax(1.5)
    data = q.save()
    assert isinstance(data, bytes) and len(data) == 68 + 4 * 4 + 4
    magic, version, abi_major, _, role, kind, length, ext = struct.unpack_from("<4s7I", data, 0)
    assert (magic, version, abi_major, role, kind, length, ext) == (b"OCTQ", 2, 1, octet.ROLE_WEIGHT, 0, 4, 0)
    updates, scale, scale_inv = struct.unpack_from("<Qff", data, 32)
    assert (updates, scale, scale_inv) == (3, np.float32(448.0) / np.float32(9.0), q.info().scale_inv)
    assert list(struct.unpack_from("<4f", data, 68)) == q.amax_history().tolist() == [1.5, 9.0, 0.5, 3.0]
    assert struct.unpack_from("<I", data, len(data) - 4)[0] == fnv1a32(data[:-4])

    restored = octet.Quantizer(octet.DelayedScaling(amax_history_len=4), "weight")
    restored.load(data)
    assert restored.save() == data
    assert restored.info() == q.info()
    assert np.array_equal(restored.amax_history(), q.amax_history())

    corrupt = bytearray(data)
    corrupt[40] ^= 1
    fresh = octet.Quantizer(octet.DelayedScaling(amax_history_len=4), "weight")
    before = fresh.save()
    with pytest.raises(octet.OctetError) as err:
        fresh.load(bytes(corrupt))
    assert err.value.status_name == "OCTET_STATUS_INVALID_ARGUMENT"
    assert fresh.save() == before  # unchanged
    with pytest.raises(octet.OctetError):
        octet.Quantizer(octet.DelayedScaling(amax_history_len=8), "weight").load(data)
    with pytest.raises(TypeError):
        fresh.load("not bytes")


def test_mxfp8_quantizer_block_scales_and_codes(ctx):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((4, 64)) * np.exp2(rng.integers(-6, 6, (4, 1)))).astype(np.float32)
    q = octet.Quantizer(octet.MXFP8Scaling(), "input")
    t = q.quantize(ctx, x, usages=octet.ROWWISE)
    assert t.scaling_mode == octet.SCALING_MXFP8_1X32
    grid = t.component(octet.ROWWISE_SCALE_INV)
    assert grid.shape == (4, 2) and grid.dtype == np.uint8
    blocks = x.reshape(4, 2, 32)
    quotient = (np.abs(blocks).max(axis=2) / np.float32(448.0)).astype(np.float32)
    mantissa, exponent = np.frexp(quotient.astype(np.float64))
    ceil_log2 = np.where(mantissa == 0.5, exponent - 1, exponent)  # RCEIL: powers of two stay
    assert np.array_equal(grid, np.clip(ceil_log2 + 127, 0, 254).astype(np.uint8))
    X = np.exp2(grid.astype(np.float64) - 127).astype(np.float32)
    want = encode((blocks / X[:, :, None]).astype(np.float32), octet.E4M3).reshape(4, 64)
    assert np.array_equal(t.codes(), want)


def test_rowwise_quantizer_scales_each_row(ctx):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((6, 40)) * np.exp2(rng.integers(-30, 8, (6, 1)))).astype(np.float32)
    x[2] = 0.0
    recipe = octet.RowwiseScaling(high_precision_wgrad=True)
    assert recipe.info()["kind"] == "rowwise" and recipe.info()["override_wgrad"] is True
    assert recipe.tensor_format("gradient") == (octet.E4M3, octet.SCALING_PER_ROW)
    t = octet.Quantizer(recipe, "input").quantize(ctx, x, usages=octet.ROWWISE)
    assert t.scaling_mode == octet.SCALING_PER_ROW
    grid = t.component(octet.ROWWISE_SCALE_INV)
    assert grid.shape == (6, 1) and grid.dtype == np.float32
    # numerics.md section 16: fp8_max / max(amax, 1e-12), rounded down to a power of two.
    amax = np.maximum(np.abs(x).max(axis=1), np.float32(1e-12)).astype(np.float32)
    quotient = (np.float32(448.0) / amax).astype(np.float32)
    scale = np.exp2(np.frexp(quotient.astype(np.float64))[1] - 1).astype(np.float32)
    assert np.array_equal(grid[:, 0], (np.float32(1.0) / scale).astype(np.float32))
    assert np.array_equal(t.codes(), encode((x * scale[:, None]).astype(np.float32), octet.E4M3))


def test_quantizer_without_recipe_follows_autocast_and_the_outermost_end_updates(ctx):
    rng = np.random.default_rng(5)
    recipe = octet.DelayedScaling(amax_history_len=4)
    q = octet.Quantizer(None, "input")
    with pytest.raises(ValueError, match="autocast"):
        q.quantize(ctx, np.ones((2, 2), np.float32))
    assert ctx.autocast_state() == (0, None)
    with ctx.autocast(recipe):
        with ctx.autocast(recipe):
            assert ctx.autocast_state() == (2, recipe)
            q.quantize(ctx, with_amax(rng, (4, 8), 3.5))
        assert q.info().scale == 1.0  # an inner end updates nothing
        assert q.info().recipe_kind == "delayed"
        q.quantize(ctx, with_amax(rng, (4, 8), 2.0))
    assert ctx.autocast_state() == (0, None)
    info = q.info()
    assert (info.scale, info.update_count) == (np.float32(448.0) / np.float32(3.5), 1)
    assert q.amax_history().tolist() == [0.0, 3.5, 0.0, 0.0]


def test_autocast_keeps_the_body_exception_and_closes_the_scope(ctx):
    with pytest.raises(KeyError):
        with ctx.autocast(octet.CurrentScaling()):
            raise KeyError("from the body")
    assert ctx.autocast_state() == (0, None)
    scope = ctx.autocast(octet.CurrentScaling())
    scope.begin()
    assert ctx.autocast_state()[0] == 1
    scope.end()
    with pytest.raises(ValueError):
        scope.end()


def test_communicator_max_with_another_process(ctx):
    rng = np.random.default_rng(6)
    other = np.float32(100.0)  # what the "other process" contributes
    calls = []

    def allreduce_max(values):
        calls.append(values.copy())
        np.maximum(values, other, out=values)

    ctx.set_communicator(allreduce_max)
    reduced = octet.Quantizer(octet.DelayedScaling(amax_history_len=2), "input")
    local = octet.Quantizer(octet.DelayedScaling(amax_history_len=2, reduce_amax=False), "input")
    second = octet.Quantizer(octet.DelayedScaling(amax_history_len=2), "weight")
    with ctx.autocast(octet.DelayedScaling()):
        reduced.quantize(ctx, with_amax(rng, (4, 4), 3.0))
        local.quantize(ctx, with_amax(rng, (4, 4), 3.0))
        second.quantize(ctx, with_amax(rng, (4, 4), 250.0))
    # One call with the reduce_amax quantizers' amaxes in order of first use.
    assert len(calls) == 1 and calls[0].tolist() == [3.0, 250.0]
    assert reduced.info().scale == np.float32(448.0) / other
    assert second.info().scale == np.float32(448.0) / np.float32(250.0)
    assert local.info().scale == np.float32(448.0) / np.float32(3.0)

    # Current scaling with reduce_amax (ABI 1.5): each quantize's amax.
    x = with_amax(rng, (6, 10), 5.0)
    q = octet.Quantizer(octet.CurrentScaling(reduce_amax=True), "input")
    t = q.quantize(ctx, x)
    scale = current_scale(other, octet.E4M3)
    assert t.component(octet.SCALE) == scale
    assert t.component(octet.AMAX) == np.float32(5.0)  # the tensor's own
    assert q.info().amax == other
    assert np.array_equal(t.codes(), encode(x * scale, octet.E4M3))

    ctx.set_communicator(None)
    t = q.quantize(ctx, x)
    assert t.component(octet.SCALE) == current_scale(5.0, octet.E4M3)


def test_communicator_exception_becomes_an_octet_error_and_changes_nothing(ctx):
    def broken(values):
        raise RuntimeError("network down")

    ctx.set_communicator(broken)
    q = octet.Quantizer(octet.DelayedScaling(amax_history_len=2), "input")
    with pytest.raises(octet.OctetError) as err:
        with ctx.autocast(octet.DelayedScaling()):
            q.quantize(ctx, np.full((2, 2), 3.0, np.float32))
    assert isinstance(err.value.__cause__, RuntimeError)
    assert "network down" in str(err.value)
    assert ctx.autocast_state() == (0, None)
    assert (q.info().scale, q.info().update_count) == (1.0, 0)
    assert q.amax_history().tolist() == [3.0, 0.0]

    current = octet.Quantizer(octet.CurrentScaling(reduce_amax=True), "input")
    with pytest.raises(octet.OctetError) as err:
        current.quantize(ctx, np.ones((2, 2), np.float32))
    assert isinstance(err.value.__cause__, RuntimeError)
    assert err.value.status_name == "OCTET_STATUS_BACKEND_ERROR"

    def unavailable(values):  # an OctetError raised hands its own status to the library
        raise octet.OctetError(7, "no peers")

    ctx.set_communicator(unavailable)
    with pytest.raises(octet.OctetError) as err:
        current.quantize(ctx, np.ones((2, 2), np.float32))
    assert err.value.status_name == "OCTET_STATUS_UNAVAILABLE" and "no peers" in str(err.value)
    assert (current.info().scale, current.info().amax) == (1.0, 0.0)  # unchanged


def test_delayed_scaling_callbacks():
    seen = []

    def mean_amax(history):
        seen.append(history.tolist())
        return float(history.mean())

    q = octet.Quantizer(octet.DelayedScaling(amax_history_len=4, amax_compute=mean_amax), "input")
    for amax in (4.0, 8.0):
        q.record_amax(amax)
        q.update_scale()
    assert seen == [[4.0, 0.0, 0.0, 0.0], [8.0, 4.0, 0.0, 0.0]]
    assert q.info().scale == np.float32(448.0) / np.float32(3.0)

    def halve(amax, old_scale, fp8_max, margin):
        return fp8_max / amax / 2

    q = octet.Quantizer(octet.DelayedScaling(amax_history_len=1, scale_compute=halve, margin=2), "input")
    q.record_amax(7.0)
    q.update_scale()
    assert q.info().scale == np.float32(448.0 / 7.0 / 2)


@pytest.mark.parametrize("which", ["amax_compute", "scale_compute"])
def test_a_raising_callback_is_an_octet_error_and_changes_nothing(which):
    def boom(*args):
        raise ZeroDivisionError("user bug")

    q = octet.Quantizer(octet.DelayedScaling(amax_history_len=2, **{which: boom}), "input")
    q.record_amax(2.0)
    before = q.save()
    with pytest.raises(octet.OctetError) as err:
        q.update_scale()
    assert isinstance(err.value.__cause__, ZeroDivisionError)
    assert "user bug" in str(err.value) and err.value.status_name == "OCTET_STATUS_BACKEND_ERROR"
    assert q.save() == before
    q2 = octet.Quantizer(octet.DelayedScaling(amax_history_len=2, amax_compute=lambda h: math.nan), "input")
    q2.record_amax(2.0)
    q2.update_scale()  # a NaN amax keeps the scale (numerics.md 14.2)
    assert q2.info().scale == 1.0


def test_bad_recipe_and_quantizer_arguments():
    with pytest.raises(octet.OctetError) as err:
        octet.DelayedScaling(amax_history_len=0)
    assert err.value.status_name == "OCTET_STATUS_INVALID_ARGUMENT" and "amax_history_len" in str(err.value)
    with pytest.raises(octet.OctetError):
        octet.DelayedScaling(format="e5m2")  # refused by the library
    with pytest.raises(octet.OctetError, match="scale"):
        octet.StaticScaling(scale=-1.0)
    with pytest.raises(ValueError, match="format"):
        octet.CurrentScaling(format="e7m0")
    with pytest.raises(ValueError, match="rounding"):
        octet.MXFP8Scaling(rounding="nearest")
    with pytest.raises(TypeError, match="margin"):
        octet.DelayedScaling(margin="1")
    with pytest.raises(TypeError):
        octet.DelayedScaling(history=4)  # not an option
    with pytest.raises(TypeError, match="callable"):
        octet.DelayedScaling(amax_compute=3)
    with pytest.raises(ValueError, match="callback"):
        octet.DelayedScaling(amax_compute=max, amax_compute_algo="max")
    with pytest.raises(TypeError):
        octet.Recipe()
    with pytest.raises(ValueError, match="role"):
        octet.Quantizer(octet.CurrentScaling(), "bias")
    with pytest.raises(TypeError, match="Recipe"):
        octet.Quantizer("current", "input")
    recipe = octet.CurrentScaling()
    recipe.close()
    with pytest.raises(ValueError, match="closed"):
        recipe.tensor_format("input")
    with octet.Context("reference") as ctx:
        with pytest.raises(TypeError, match="Recipe"):
            ctx.autocast(None)
        with pytest.raises(TypeError, match="callable"):
            ctx.set_communicator(5)
        q = octet.Quantizer(octet.CurrentScaling(), "input")
        with pytest.raises(TypeError, match="Context"):
            q.quantize("reference", np.ones(2, np.float32))
        wrong = ctx.empty((2, 2), octet.E5M2, usages=octet.BOTH)  # input role is E4M3
        with pytest.raises(octet.OctetError) as err:
            q.quantize(ctx, np.ones((2, 2), np.float32), out=wrong)
        assert err.value.status_name == "OCTET_STATUS_INVALID_ARGUMENT"
