"""The narrow formats the audit checks, their values as the reference
decodes them, and the categories of an input value (what part of a
format's rules an input exercises: a tie, a subnormal, the overflow
region, ...), by which disagreements are grouped."""

import functools
import threading

import numpy as np

from .. import _core as octet

# Categories of an input value for an encoder (FP32 -> narrow), in the order
# they are decided: the first that applies.
NAN, INF, ZERO, OVERFLOW, TIE, UNDERFLOW, SUBNORMAL, NORMAL = (
    "nan input", "infinite input", "zero input", "overflow region", "tie", "below the smallest subnormal",
    "subnormal range", "normal range")
# E8M0 (unsigned powers of two) has its own.
NEGATIVE, BELOW_MIN, ABOVE_MAX, POWER_OF_TWO, BETWEEN = (
    "negative input", "below 2^-127", "above 2^127", "power of two", "between powers of two")
# categorize() gives each input the index of its category in CATEGORIES (an
# integer code: 2^32 inputs are grouped by numpy, not by Python strings).
CATEGORIES = (NAN, INF, ZERO, OVERFLOW, TIE, UNDERFLOW, SUBNORMAL, NORMAL,
              NEGATIVE, BELOW_MIN, ABOVE_MAX, POWER_OF_TWO, BETWEEN)
CODE = {name: i for i, name in enumerate(CATEGORIES)}


class Format:
    """One narrow format. `bits` 8 or 4; `max_code_odd`: whether the largest
    finite code has last mantissa bit 1, so that a tie between it and the
    next (unrepresentable) value rounds up, out of range (numerics.md
    section 2)."""

    def __init__(self, name, dtype, bits, max_code_odd, fnuz=False, unsigned_pow2=False):
        self.name, self.dtype, self.bits = name, dtype, bits
        self.max_code_odd, self.fnuz, self.unsigned_pow2 = max_code_odd, fnuz, unsigned_pow2
        self.ncodes = 1 << bits

    def __repr__(self):
        return self.name

    @functools.cached_property
    def table(self):
        """float32 value of every code, decoded by the reference."""
        codes = np.arange(self.ncodes, dtype=np.uint8)
        if self.unsigned_pow2:
            ctx = reference_context()
            return ctx.convert(ctx.tensor(codes, dtype=octet.E8M0), octet.FP32).numpy()
        return octet.fp8_decode(codes, self.dtype)

    @functools.cached_property
    def grid(self):
        """The positive finite values, ascending, as float64, with 0 first
        (not for E8M0), and the value one step past the largest."""
        values = self.table.astype(np.float64)
        pos = np.unique(values[np.isfinite(values) & (values > 0)])
        step = pos[-1] - pos[-2] if not self.unsigned_pow2 else pos[-1]
        start = [] if self.unsigned_pow2 else [0.0]
        return np.concatenate([start, pos, [pos[-1] + step]])

    @property
    def max(self):
        return float(self.grid[-2])

    @property
    def min_normal(self):
        """Smallest normal value: half the first value where the spacing of
        the values (constant over the subnormals and the first binade)
        doubles."""
        g = self.grid[1:-1]
        for i in range(len(g) - 2):
            if g[i + 1] - g[i] != g[1] - g[0]:
                return float(g[i]) / 2
        return float(g[0])

    @property
    def min_subnormal(self):
        return float(self.grid[1])

    def is_nan(self, codes):
        return np.isnan(self.table[np.asarray(codes, dtype=np.intp)])

    def describe(self, code):
        code = int(code)
        return f"{code:#04x} ({format_value(self.table[code])})"


def format_value(v):
    v = float(v)
    if np.isnan(v):
        return "-nan" if np.signbit(v) else "nan"
    if np.isinf(v):
        return "-inf" if v < 0 else "inf"
    return repr(v) if v != int(v) or abs(v) >= 1e16 else ("-0" if v == 0 and np.signbit(v) else str(int(v)))


FORMATS = {f.name: f for f in (
    Format("e4m3fn", octet.E4M3, 8, max_code_odd=False),
    Format("e5m2", octet.E5M2, 8, max_code_odd=True),
    Format("e4m3fnuz", octet.E4M3FNUZ, 8, max_code_odd=True, fnuz=True),
    Format("e5m2fnuz", octet.E5M2FNUZ, 8, max_code_odd=True, fnuz=True),
    Format("e8m0fnu", octet.E8M0, 8, max_code_odd=False, unsigned_pow2=True),
    Format("e2m1fn", octet.E2M1, 4, max_code_odd=True),
)}


_contexts = threading.local()


def reference_context():
    """The reference backend's context, the oracle of every check: one per
    thread (a context is used by one thread at a time)."""
    ctx = getattr(_contexts, "ctx", None)
    if ctx is None:
        ctx = _contexts.ctx = octet.Context("reference")
    return ctx


def categorize(fmt, values):
    """The category of each input value (float32 array), as int8 indices
    into CATEGORIES."""
    v = np.asarray(values, dtype=np.float32)
    a = np.abs(v)
    finite = np.isfinite(a)
    if fmt.unsigned_pow2:
        out = np.full(v.shape, CODE[BETWEEN], dtype=np.int8)
        exact = finite & (a > 0) & (np.frexp(a)[0] == 0.5)
        rules = [(np.isnan(v), NAN), (np.isinf(v), INF), (v == 0, ZERO), (v < 0, NEGATIVE),
                 (a < np.float32(2.0 ** -127), BELOW_MIN), (finite & (a > np.float32(2.0 ** 127)), ABOVE_MAX),
                 (exact, POWER_OF_TWO)]
    else:
        out = np.full(v.shape, CODE[NORMAL], dtype=np.int8)
        g = fmt.grid
        a64 = np.where(finite, a, 0).astype(np.float64)
        mid = (g[-2] + g[-1]) / 2
        overflow = finite & ((a64 > mid) | ((a64 == mid) & fmt.max_code_odd))
        i = np.clip(np.searchsorted(g, a64, side="right") - 1, 0, len(g) - 2)
        tie = finite & (a64 - g[i] == g[i + 1] - a64)
        rules = [(np.isnan(v), NAN), (np.isinf(v), INF), (v == 0, ZERO), (overflow, OVERFLOW), (tie, TIE),
                 (a64 < fmt.min_subnormal, UNDERFLOW), (a64 < fmt.min_normal, SUBNORMAL)]
    for mask, name in reversed(rules):
        out[mask] = CODE[name]
    return out
