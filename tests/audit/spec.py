"""Independent FP8 encoders written from the specs (OCP 8-bit floating
point v1.0; ONNX Cast's tables), one value at a time in float64, for the
tests' expectations. Nothing here comes from octet or the audit."""

import math

import numpy as np

# name: (exponent bits, mantissa bits, bias, largest finite, fnuz, has infinity)
FORMATS = {"e4m3fn": (4, 3, 7, 448.0, False, False), "e5m2": (5, 2, 15, 57344.0, False, True),
           "e4m3fnuz": (4, 3, 8, 240.0, True, False), "e5m2fnuz": (5, 2, 16, 57344.0, True, False)}


def _nan(fmt, sign):
    return 0x80 if FORMATS[fmt][4] else (0x7F | sign)


def _inf(fmt, sign):
    return 0x7C | sign


def _max_code(fmt, sign):
    e, m, bias, top, fnuz, inf = FORMATS[fmt]
    return _code(fmt, top, sign)


def _code(fmt, val, sign):
    e, m, bias, top, fnuz, inf = FORMATS[fmt]
    emin = 1 - bias
    if val == 0:
        return 0 if fnuz else sign
    if val < 2.0 ** emin:
        field, mant = 0, int(val / 2.0 ** (emin - m))
    else:
        E = math.floor(math.log2(val))
        field, mant = E + bias, int(val / 2.0 ** (E - m)) - (1 << m)
    return sign | (field << m) | mant


def round_to_format(fmt, a, ties_away=False):
    """|x| rounded to the format's precision with the exponent unbounded
    above: nearest, ties to even (or away from zero)."""
    e, m, bias, top, fnuz, inf = FORMATS[fmt]
    emin = 1 - bias
    q = 2.0 ** (max(math.floor(math.log2(a)), emin) - m) if a > 0 else 1.0
    r = a / q
    n = math.floor(r + 0.5) if ties_away else round(r)  # round(): half to even
    return n * q


def encode(fmt, x, saturate, ties_away=False):
    """The code of float x (OCP FP8 v1.0 conversion; ONNX Cast's tables)."""
    x = float(x)
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return _nan(fmt, sign)
    e, m, bias, top, fnuz, inf = FORMATS[fmt]
    a = abs(x)
    val = math.inf if math.isinf(a) else round_to_format(fmt, a, ties_away)
    if val > top:
        if saturate:
            return _max_code(fmt, sign)
        return _inf(fmt, sign) if inf else _nan(fmt, sign)
    return _code(fmt, val, sign)


def decode(fmt, code):
    e, m, bias, top, fnuz, inf = FORMATS[fmt]
    sign = -1.0 if code & 0x80 else 1.0
    if fnuz and code == 0x80:
        return math.nan
    field, mant = (code >> m) & ((1 << e) - 1), code & ((1 << m) - 1)
    if not fnuz and not inf and field == (1 << e) - 1 and mant == (1 << m) - 1:
        return math.nan
    if inf and field == (1 << e) - 1:
        return sign * math.inf if mant == 0 else math.nan
    if field == 0:
        return sign * mant * 2.0 ** (1 - bias - m)
    return sign * (1 + mant / 2.0 ** m) * 2.0 ** (field - bias)


def is_nan_code(fmt, code):
    return math.isnan(decode(fmt, code))


def is_tie(fmt, x):
    """x lies exactly halfway between two neighbours of the format's grid."""
    a = abs(float(x))
    if not math.isfinite(a) or a == 0:
        return False
    e, m, bias, top, fnuz, inf = FORMATS[fmt]
    q = 2.0 ** (max(math.floor(math.log2(a)), 1 - bias) - m)
    return (a / q) % 1 == 0.5


def probe_values(fmt, seed=0):
    """Float32 inputs across a format's rules: every value, every midpoint,
    one FP32 step either side of each, the region past the largest value,
    NaN, infinities, zeros, and random values."""
    e, m, bias, top, fnuz, inf = FORMATS[fmt]
    values = sorted({abs(decode(fmt, c)) for c in range(256) if math.isfinite(decode(fmt, c))})
    values.append(top + (top - values[-2]))
    mids = [(a + b) / 2 for a, b in zip(values, values[1:])]
    base = np.array(values + mids, dtype=np.float32)
    near = np.concatenate([base, np.nextafter(base, np.float32(np.inf)), np.nextafter(base, np.float32(0))])
    rng = np.random.default_rng(seed)
    extra = np.concatenate([rng.uniform(top, 2 * top, 200), rng.standard_normal(2000) * top / 4,
                            [np.inf, np.nan, 0.0, 1e30, 3e38]]).astype(np.float32)
    out = np.concatenate([near, extra])
    return np.concatenate([out, -out])


# OCP MX v1.0 section 6.3: X = 2^(floor(log2 amax) - emax_elem), emax_elem the
# exponent of the element format's largest power of two; E8M0 code = that
# exponent + 127, here over the block's finite elements and clamped to the
# codes that exist (0x00 .. 0xfe), amax 0 giving 0x00 (numerics.md section 11).
EMAX = {"e4m3fn": 8, "e5m2": 15}


def mx_floor_scale(fmt, block):
    finite = [abs(float(v)) for v in block if math.isfinite(float(v))]
    amax = max(finite, default=0.0)
    if amax == 0:
        return 0
    return min(max(math.floor(math.log2(amax)) - EMAX[fmt] + 127, 0), 254)


def current_scale(fmt, values, epsilon=0.0):
    """numerics.md section 14.1 / OCP-independent current scaling: fp8_max /
    max(amax, epsilon) rounded to FP32; 1 when the amax is 0, inf or NaN."""
    finite_or_inf = [abs(float(v)) for v in values if not math.isnan(float(v))]
    amax = max(max(finite_or_inf, default=0.0), epsilon)
    if amax == 0 or math.isinf(amax):
        return 1.0
    return float(np.float32(np.float32(FORMATS[fmt][3]) / np.float32(amax)))
