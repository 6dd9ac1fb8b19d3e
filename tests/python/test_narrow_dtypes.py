"""The FNUZ FP8 dtypes and FP4 E2M1 against ml_dtypes (float8_e4m3fnuz,
float8_e5m2fnuz, float4_e2m1fn), an implementation written independently of
Octet: every code decoded, and every rounding boundary (midpoints between
adjacent values and their float32 neighbours) plus random values encoded.
Where the formats' documented rules differ from ml_dtypes' casts (E2M1 has
no NaN code, and ml_dtypes' non-saturating cast has no overflow rule to
compare), the rule is checked on its own."""

import numpy as np
import pytest

import octet

ml_dtypes = pytest.importorskip("ml_dtypes")

FORMATS = [
    (octet.E4M3FNUZ, "float8_e4m3fnuz", 256),
    (octet.E5M2FNUZ, "float8_e5m2fnuz", 256),
    (octet.E2M1, "float4_e2m1fn", 16),
]


def _ml(name):
    if not hasattr(ml_dtypes, name):
        pytest.skip(f"this ml_dtypes has no {name}")
    return np.dtype(getattr(ml_dtypes, name))


@pytest.mark.parametrize("dtype,name,count", FORMATS)
def test_every_code_decodes_as_ml_dtypes_does(dtype, name, count):
    ml = _ml(name)
    codes = np.arange(count, dtype=np.uint8)
    expected = codes.view(ml).astype(np.float32)
    got = octet.fp8_decode(codes, dtype)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    finite = ~np.isnan(expected)
    np.testing.assert_array_equal(got[finite], expected[finite])
    np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(expected[finite]))


def _boundaries(values):
    """Every finite value, the midpoints between neighbours, one step past
    the largest, and the float32 neighbours of each; both signs."""
    v = np.unique(np.abs(values[np.isfinite(values)]).astype(np.float64))
    step = v[-1] - v[-2]
    v = np.append(v, v[-1] + step)
    mids = (v[:-1] + v[1:]) / 2
    points = np.concatenate([v, mids]).astype(np.float32)
    around = np.concatenate([points, np.nextafter(points, np.float32(0)), np.nextafter(points, np.float32(np.inf))])
    return np.concatenate([around, -around])


@pytest.mark.parametrize("dtype,name,count", FORMATS)
def test_saturating_encode_matches_ml_dtypes_at_every_boundary(dtype, name, count):
    ml = _ml(name)
    values = np.arange(count, dtype=np.uint8).view(ml).astype(np.float32)
    top = np.float32(octet._dtypes._FP8_MAX.get(dtype, 6.0))
    rng = np.random.default_rng(19)
    x = np.concatenate([_boundaries(values), rng.normal(0, float(top) / 3, 4096).astype(np.float32),
                        rng.normal(0, 1e-3, 1024).astype(np.float32)])
    # ml_dtypes' cast does not saturate: clamp first, as saturation does.
    expected = np.clip(x, -top, top).astype(ml).view(np.uint8)
    got = octet.fp8_encode(x, dtype, saturate=True)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype,name", [(octet.E4M3FNUZ, "float8_e4m3fnuz"), (octet.E5M2FNUZ, "float8_e5m2fnuz")])
def test_fnuz_non_saturating_overflow_nan_and_negative_zero(dtype, name):
    ml = _ml(name)
    x = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, -1e-30, 1e30], dtype=np.float32)
    got = octet.fp8_encode(x, dtype, saturate=False)
    np.testing.assert_array_equal(got, [0x80, 0x80, 0x80, 0x80, 0x00, 0x00, 0x80])
    # ml_dtypes agrees on NaN, infinity and the zeros.
    np.testing.assert_array_equal(x[:6].astype(ml).view(np.uint8), got[:6])


def test_e2m1_refuses_what_it_cannot_represent():
    with pytest.raises(octet.OctetError, match=r"in\[1\].*NaN"):
        octet.fp8_encode([1.0, np.nan], octet.E2M1)
    with pytest.raises(octet.OctetError, match=r"in\[0\].*beyond E2M1's largest value 6"):
        octet.fp8_encode([7.0], octet.E2M1, saturate=False)
    np.testing.assert_array_equal(octet.fp8_encode([6.9, -np.inf], octet.E2M1, saturate=True), [0x7, 0xF])
    with pytest.raises(ValueError, match="E2M1 codes"):
        octet.fp8_decode([16], octet.E2M1)


def test_e2m1_codes_keep_their_shape_and_round_trip():
    x = np.array([[0.5, -6.0, 3.0], [0.0, -0.0, 1.5]], dtype=np.float32)
    codes = octet.fp8_encode(x, octet.E2M1)
    assert codes.shape == (2, 3)
    np.testing.assert_array_equal(codes, [[1, 15, 5], [0, 8, 3]])
    np.testing.assert_array_equal(octet.fp8_decode(codes, octet.E2M1), x)


def test_dtypes_are_named_and_have_their_dlpack_codes():
    import ctypes
    from octet._lib import lib
    for dtype, name, code, bits in [(octet.E4M3FNUZ, b"e4m3fnuz", 11, 8), (octet.E5M2FNUZ, b"e5m2fnuz", 13, 8),
                                    (octet.E2M1, b"e2m1", 17, 4)]:
        assert lib.octet_dtype_name(dtype) in (name, name.decode())
        c, b = ctypes.c_uint8(), ctypes.c_uint8()
        assert lib.octet_dtype_to_dlpack(dtype, ctypes.byref(c), ctypes.byref(b)) == 0
        assert (c.value, b.value) == (code, bits)


@pytest.mark.parametrize("dtype,name", [(octet.E4M3FNUZ, "float8_e4m3fnuz"), (octet.E5M2FNUZ, "float8_e5m2fnuz")])
def test_the_reference_quantizes_fnuz_tensors_as_ml_dtypes_rounds(dtype, name):
    ml = _ml(name)
    ctx = octet.Context("reference")
    assert ctx.info()["dtypes"] & (1 << dtype)
    x = np.random.default_rng(7).normal(0, 30, (8, 16)).astype(np.float32)
    q = ctx.quantize(x, dtype, scale=2.0)
    top = np.float32(octet._dtypes._FP8_MAX[dtype])
    np.testing.assert_array_equal(q.codes(), np.clip(x * 2, -top, top).astype(ml).view(np.uint8))
    np.testing.assert_array_equal(q.values(), q.codes().view(ml).astype(np.float32) / 2)
    # A recipe of the FNUZ family, scale from the data: the largest |x| lands on the format's max.
    fp8 = octet.Quantizer(octet.CurrentScaling(format=octet._dtypes._lib_dtype_name(dtype)), "input").quantize(ctx, x)
    assert np.max(np.abs(fp8.codes().view(ml).astype(np.float32))) == top


def test_recipes_name_the_fnuz_formats():
    assert octet.CurrentScaling(format="hybrid_fnuz").tensor_format("gradient")[0] == octet.E5M2FNUZ
    with pytest.raises(octet.OctetError, match="MXFP8"):
        octet.MXFP8Scaling(format="e4m3fnuz")
