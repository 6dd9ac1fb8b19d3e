"""The Python interface, checked against expectations computed here from the
format definitions and with NumPy in double precision."""

import math

import numpy as np
import pytest

import octet

FORMATS = {octet.E4M3: (4, 3, 7), octet.E5M2: (5, 2, 15)}


def decode_from_definition(code, dtype):
    """FP8 code -> value, from sign/exponent/mantissa and the special codes."""
    e_bits, m_bits, bias = FORMATS[dtype]
    sign = -1.0 if code & 0x80 else 1.0
    exponent = (code >> m_bits) & ((1 << e_bits) - 1)
    mantissa = code & ((1 << m_bits) - 1)
    if dtype == octet.E4M3 and (code & 0x7F) == 0x7F:
        return math.nan
    if dtype == octet.E5M2 and exponent == 0x1F:
        return sign * math.inf if mantissa == 0 else math.nan
    if exponent == 0:
        return sign * math.ldexp(mantissa, 1 - bias - m_bits)
    return sign * math.ldexp((1 << m_bits) + mantissa, exponent - bias - m_bits)


@pytest.mark.parametrize("dtype", [octet.E4M3, octet.E5M2])
def test_every_code_decodes_as_the_format_defines(dtype):
    codes = np.arange(256, dtype=np.uint8)
    got = octet.fp8_decode(codes, dtype)
    for code in range(256):
        want = decode_from_definition(code, dtype)
        if math.isnan(want):
            assert math.isnan(got[code])
        else:
            assert got[code] == want, hex(code)


@pytest.mark.parametrize("dtype", [octet.E4M3, octet.E5M2])
def test_encode_rounds_to_nearest_even_and_saturates(dtype):
    finite = sorted({decode_from_definition(c, dtype) for c in range(128)} - {math.nan})
    finite = [v for v in finite if not math.isnan(v) and not math.isinf(v)]
    fmax = finite[-1]
    # Midpoints between neighbours go to the neighbour with the even code.
    values, expected = [], []
    for lo, hi in zip(finite, finite[1:]):
        mid = (lo + hi) / 2
        lo_code = octet.fp8_encode(np.float32(lo), dtype)[()]
        values.append(mid)
        expected.append(lo if lo_code % 2 == 0 else hi)
    got = octet.fp8_decode(octet.fp8_encode(np.array(values, np.float32), dtype), dtype)
    assert got.tolist() == expected
    assert octet.fp8_decode(octet.fp8_encode(np.float32(1e30), dtype), dtype)[()] == fmax
    non_sat = octet.fp8_decode(octet.fp8_encode(np.float32(1e30), dtype, saturate=False), dtype)[()]
    assert math.isnan(non_sat) if dtype == octet.E4M3 else math.isinf(non_sat)


def test_reference_is_registered_first():
    names = [b["name"] for b in octet.backends()]
    assert names[0] == "reference"
    assert octet.abi_version()[0] == 1


def test_unknown_backend_raises_with_the_library_message():
    with pytest.raises(octet.OctetError) as err:
        octet.Context("no_such_backend")
    assert err.value.status_name == "OCTET_STATUS_NOT_FOUND"
    assert "no_such_backend" in str(err.value)


def quantized_gemm(profile, x, w, trans_b):
    with octet.Context("reference", profile=profile) as ctx:
        qx = ctx.quantize(x, octet.E4M3, scale=16.0)
        qw = ctx.quantize(w, octet.E5M2, scale=256.0)
        y = ctx.gemm(qx, qw, trans_b=trans_b).numpy()
        codes = (qx.codes(), qw.codes(), qx.component(octet.SCALE_INV), qw.component(octet.SCALE_INV))
        return y, codes


@pytest.mark.parametrize("trans_b", [False, True])
def test_fp8_gemm_matches_double_precision_and_profiles_agree(trans_b):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((37, 53)).astype(np.float32)
    w = (rng.standard_normal((53, 29) if trans_b else (29, 53)) * 0.1).astype(np.float32)
    y_hopper, (cx, cw, sx, sw) = quantized_gemm("hopper-like", x, w, trans_b)
    y_blackwell, _ = quantized_gemm("blackwell-like", x, w, trans_b)
    assert np.array_equal(y_hopper.view(np.uint32), y_blackwell.view(np.uint32))
    a = octet.fp8_decode(cx, octet.E4M3).astype(np.float64)
    b = octet.fp8_decode(cw, octet.E5M2).astype(np.float64)
    b = b if trans_b else b.T  # B' as [K, N]
    want = (a @ b) * sx * sw
    bound = 53 * 2.0**-23 * (np.abs(a) @ np.abs(b)) * sx * sw + np.abs(want) * 2.0**-23
    assert np.all(np.abs(y_hopper - want) <= bound)


def test_quantize_columnwise_copy_is_the_transpose_on_hopper():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 7)).astype(np.float32)
    with octet.Context("reference", profile="hopper-like") as ctx:
        q = ctx.quantize(x, octet.E4M3, scale=4.0)
        assert np.array_equal(q.component(octet.COLUMNWISE_DATA), q.codes().T)
        assert q.component(octet.AMAX) == np.abs(x).max()
        assert q.component(octet.SCALE_INV) == np.float32(1.0) / np.float32(4.0)


def test_bf16_convert_rounds_to_nearest_even():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(1000).astype(np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    # Independent RNE on the bit pattern (finite inputs only).
    want = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    with octet.Context("reference") as ctx:
        got = ctx.convert(x, octet.BF16).codes()
    assert np.array_equal(got, want)


def test_shape_mismatch_is_an_invalid_argument_naming_the_rule():
    with octet.Context("reference") as ctx:
        with pytest.raises(octet.OctetError) as err:
            ctx.gemm(np.ones((3, 4), np.float32), np.ones((5, 6), np.float32))
    assert err.value.status_name == "OCTET_STATUS_INVALID_ARGUMENT"
    assert "inner dimensions" in str(err.value)


def test_float_arrays_are_not_taken_as_raw_codes():
    with octet.Context("reference") as ctx:
        with pytest.raises(TypeError):
            ctx.tensor(np.array([0.5, 1.5], np.float32), dtype=octet.E4M3)
        codes = octet.fp8_encode([0.5, 1.5], octet.E4M3)
        assert np.array_equal(ctx.tensor(codes, dtype=octet.E4M3).codes(), codes)
        # Widening to FP32 stays allowed.
        assert ctx.tensor(np.array([1.0, 2.0]), dtype=octet.FP32).numpy().tolist() == [1.0, 2.0]


@pytest.mark.parametrize("saturate", [True, False])
def test_fp8_gemm_output_is_the_fp32_result_encoded_with_d_scale(saturate):
    rng = np.random.default_rng(11)
    with octet.Context("reference") as ctx:
        x = ctx.quantize(rng.standard_normal((9, 16)).astype(np.float32), octet.E4M3, scale=8.0)
        w = ctx.quantize(rng.standard_normal((5, 16)).astype(np.float32), octet.E4M3, scale=8.0)
        r = ctx.gemm(x, w).numpy()  # the FP32 result
        d = ctx.empty((9, 5), octet.E4M3, usages=octet.ROWWISE)
        scale = 300.0  # large enough that some results overflow E4M3
        d.set_scale(scale)
        ctx.gemm(x, w, out=d, saturate_output=saturate, fast_accumulation=True)
        want = octet.fp8_encode((r * np.float32(scale)).astype(np.float32), octet.E4M3, saturate=saturate)
        assert np.array_equal(d.codes(), want)
        assert d.component(octet.AMAX) == np.float32(np.max(np.abs(r)))
        assert d.component(octet.SCALE_INV) == np.float32(1.0) / np.float32(scale)
        assert np.any((want & 0x7F) == (0x7E if saturate else 0x7F))


@pytest.mark.parametrize("scale", [0.5, 7.0, 1.1])
def test_set_scale_sets_the_pair_and_dequantize_follows(scale):
    # Codes of [0, 1, 2, 49152, -192] in E5M2 (exact at scale 1); after
    # set_scale(s) they dequantize to code value / s, computed here from the
    # codes' values and s (SCALE_INV = fl(1/s), one FP32 product each).
    values = np.array([[0.0, 1.0, 2.0, 49152.0, -192.0]], np.float32)
    with octet.Context("reference") as ctx:
        q = ctx.quantize(values, octet.E5M2, scale=1.0)
        q.set_scale(scale)
        scale_inv = np.float32(1.0) / np.float32(scale)
        assert q.component(octet.SCALE) == np.float32(scale)
        assert q.component(octet.SCALE_INV) == scale_inv
        assert np.array_equal(ctx.dequantize(q).numpy(), values * scale_inv)
