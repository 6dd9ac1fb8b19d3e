"""Expectations computed independently of the library: FP8 values from the
format definitions, an encoder by exhaustive nearest-code search, and the
scaling rules of docs/recipes.md (numerics.md 14.2, 14.1) re-implemented."""

import math

import numpy as np
import pytest

import octet

FORMATS = {octet.E4M3: (4, 3, 7), octet.E5M2: (5, 2, 15)}
FP8_MAX = {octet.E4M3: 448.0, octet.E5M2: 57344.0}
EPS32 = 2.0**-23


def decode_code(code, dtype):
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


def decode(codes, dtype):
    table = np.array([decode_code(c, dtype) for c in range(256)], dtype=np.float64)
    return table[np.asarray(codes, dtype=np.uint8)]


def _positive_finite(dtype):
    codes = [c for c in range(128) if math.isfinite(decode_code(c, dtype))]
    return np.array(codes), np.array([decode_code(c, dtype) for c in codes])


def encode(values, dtype):
    """Saturating FP32 -> FP8 by exhaustive search: the finite code of the
    value's sign nearest to it, a tie going to the even code."""
    y = np.asarray(values, dtype=np.float32)
    flat = y.astype(np.float64).ravel()
    codes, table = _positive_finite(dtype)
    sign = np.where(np.signbit(y.ravel()), 0x80, 0x00)
    a = np.abs(flat)
    a = np.where(np.isinf(a), table[-1], a)
    dist = np.abs(a[:, None] - table[None, :])
    best = dist.min(axis=1, keepdims=True)
    ties = dist == best
    # Among the (at most two, adjacent) nearest codes prefer the even one.
    even_tie = ties & (codes[None, :] % 2 == 0)
    pick = np.where(even_tie.any(axis=1), even_tie.argmax(axis=1), ties.argmax(axis=1))
    out = (codes[pick] | sign).astype(np.uint8)
    out[np.isnan(flat)] = 0x7F | sign[np.isnan(flat)]
    return out.reshape(y.shape)


def current_scale(amax, dtype, epsilon=0.0, power_of_two=False):
    """numerics.md 14.1: fp8_max / max(amax, epsilon) in FP32; 1 for 0/inf/NaN."""
    amax = max(np.float32(amax), np.float32(epsilon))
    if amax == 0 or not np.isfinite(amax):
        return np.float32(1.0)
    scale = np.float32(FP8_MAX[dtype]) / np.float32(amax)
    if power_of_two:
        scale = np.float32(2.0 ** math.floor(math.log2(scale)))
    return scale


class DelayedScalingModel:
    """numerics.md 14.2 as docs/recipes.md states it, for one quantizer."""

    def __init__(self, history_len, margin=0, interval=1, algo="max", fp8_max=448.0):
        self.history = [np.float32(0.0)] * history_len
        self.scale = np.float32(1.0)
        self.count = 0
        self.margin, self.interval, self.algo, self.fp8_max = margin, interval, algo, fp8_max

    def record(self, amax):
        self.history[0] = max(self.history[0], np.float32(amax))

    def update(self):
        amax = max(self.history) if self.algo == "max" else self.history[0]
        self.count += 1
        if self.count % self.interval == 0 and np.isfinite(amax) and amax > 0:
            scale = np.float32(math.ldexp(self.fp8_max, -self.margin)) / np.float32(amax)
            self.scale = np.float32(np.finfo(np.float32).max) if np.isinf(scale) else scale
        self.history = [np.float32(0.0)] + self.history[:-1]


def fnv1a32(data):
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def registered(name):
    return any(b["name"] == name for b in octet.backends())


def backend_params():
    """"reference" and "cpu", the latter skipped when not registered."""
    return [
        "reference",
        pytest.param("cpu", marks=pytest.mark.skipif(not registered("cpu"), reason="the cpu backend is not "
                                                     "registered (build with -DOCTET_WITH_ONEDNN=ON)")),
    ]
