"""How a disagreement with the reference is judged: rules written from the
specs (OCP 8-bit floating point v1.0, OCP MX v1.0, the ONNX Cast and
QuantizeLinear operator docs), never from what an implementation was seen
to do. A disagreement the specs leave room for is a convention difference;
every other one is wrong, grouped by the category of its input
(formats.categorize)."""

import numpy as np

from . import formats
from .formats import categorize
from .report import CONVENTION, WRONG

NAN_CODE = ("NaN code or sign",
            "a NaN must become a NaN; which NaN code (E5M2 has three per sign) and its sign are not fixed by "
            "OCP FP8 v1.0 (section 5: all of them are NaN) nor by ONNX Cast (its table says 'NaN')")
NO_E2M1_CODE = ("no E2M1 code",
                "E2M1 has no NaN or infinity code (OCP MX v1.0, section 5.3.3): what a cast writes for NaN, or "
                "for a value beyond 6 without saturation, is the implementation's (the reference refuses it)")
NO_E8M0_VALUE = ("no E8M0 value",
                 "E8M0 has no zero, sign or infinity (OCP MX v1.0, section 5.4.1); ONNX Cast leaves -0 and "
                 "negative inputs unspecified and maps 0 to the smallest code when saturating, NaN otherwise; "
                 "the reference gives NaN (0xff) for zero and negatives and 0xfe for +inf (numerics.md section 5)")
E8M0_RANGE = ("out of E8M0's range",
              "below 2^-127 or above 2^127: the smallest or largest code (saturating) or NaN (ONNX Cast, "
              "saturate=0); the reference clamps (numerics.md section 5)")
E8M0_ROUNDING = ("E8M0 rounding direction",
                 "OCP MX v1.0 defines no FP32 -> E8M0 cast, so rounding down or up to a power of two are both "
                 "conventions; the reference rounds up (CEIL, numerics.md section 5)")
NAN_PAYLOAD = ("NaN payload or sign",
               "a decoded NaN must be a NaN; its payload (and, for FNUZ and E8M0, which have unsigned NaNs, its "
               "sign) is not fixed by OCP FP8 v1.0, OCP MX v1.0 or IEEE 754; the reference gives the quiet NaN "
               "with the code's sign (numerics.md section 3)")

WRONG_RULES = {
    formats.NAN: "a NaN must become a NaN code (OCP FP8 v1.0; ONNX Cast)",
    formats.INF: "an infinity becomes the largest finite value (saturating) or infinity / NaN (non-saturating: "
                 "OCP FP8 v1.0 section 5; ONNX Cast's tables)",
    formats.ZERO: "zero keeps its sign where the format has -0 (E4M3FN, E5M2, E2M1), else becomes 0x00",
    formats.OVERFLOW: "a value that rounds beyond the largest finite value (judged after rounding, OCP FP8 v1.0; "
                      "ONNX Cast's '[x] > FLT_MAX') saturates or becomes infinity / NaN, by the mode",
    formats.TIE: "round to nearest, ties to even (OCP FP8 v1.0 section 5; ONNX Cast 'RNE')",
    formats.UNDERFLOW: "round to nearest even: below half the smallest subnormal to zero (sign kept where -0 "
                       "exists), above it to the smallest subnormal",
    formats.SUBNORMAL: "round to nearest even on the subnormal spacing (OCP FP8 v1.0)",
    formats.NORMAL: "round to nearest even (OCP FP8 v1.0 section 5; ONNX Cast 'RNE')",
    formats.POWER_OF_TWO: "a power of two in E8M0's range is exact in E8M0",
    formats.BETWEEN: "a value between two powers of two becomes one of them",
}


def value_text(v):
    return formats.format_value(v)


# Convention classes, by index: an element's class key is CONVENTION_KEY + the
# index here for a convention, its input's category code (formats.CODE) when
# wrong.
CONVENTIONS = (NAN_CODE, NO_E2M1_CODE, NO_E8M0_VALUE, E8M0_RANGE, E8M0_ROUNDING)
CONVENTION_KEY = 100


def encode_classes(fmt, values, ref, got, target_rules):
    """(keys, classes) of disagreeing elements: keys (int16, one per
    element) and classes {key: (verdict, class name, rule)} for the keys
    present. values: float32 inputs, ref: the reference's codes (-1 for
    none), got: the target's codes. target_rules: "e8m0_rounding" = "up"
    when the target's spec pins it (ONNX Cast's round_mode default)."""
    values = np.asarray(values, dtype=np.float32)
    ref, got = np.asarray(ref), np.asarray(got)
    keys = np.full(values.shape, -1, dtype=np.int16)

    def convention(mask, rule):
        keys[mask & (keys < 0)] = CONVENTION_KEY + CONVENTIONS.index(rule)

    valid = ref >= 0
    convention(valid & fmt.is_nan(np.where(valid, ref, 0)) & fmt.is_nan(got & (fmt.ncodes - 1)) &
               (got < fmt.ncodes), NAN_CODE)
    convention(~valid, NO_E2M1_CODE)
    if fmt.unsigned_pow2:
        cats = categorize(fmt, values)
        code = formats.CODE
        convention(np.isin(cats, [code[formats.ZERO], code[formats.NEGATIVE], code[formats.INF]]), NO_E8M0_VALUE)
        convention(np.isin(cats, [code[formats.BELOW_MIN], code[formats.ABOVE_MAX]]) & np.isin(got, [0x00, 0xFE, 0xFF]),
                   E8M0_RANGE)
        if target_rules.get("e8m0_rounding") is None:
            between = np.nonzero(cats == code[formats.BETWEEN])[0]
            down = np.frexp(values[between])[1].astype(np.int16) - 1 + 127  # floor(log2 x) + bias
            g = got[between].astype(np.int16)
            sel = between[(g == down) | (g == down + 1)]
            hit = np.zeros(values.shape, dtype=bool)
            hit[sel] = True
            convention(hit, E8M0_ROUNDING)
        undecided = keys < 0
        keys[undecided] = cats[undecided]
    else:
        undecided = np.nonzero(keys < 0)[0]
        keys[undecided] = categorize(fmt, values[undecided])
    classes = {}
    for key in np.unique(keys).tolist():
        if key >= CONVENTION_KEY:
            name, rule = CONVENTIONS[key - CONVENTION_KEY]
            classes[key] = (CONVENTION, name, rule)
        else:
            name = formats.CATEGORIES[key]
            classes[key] = (WRONG, name, WRONG_RULES.get(name, "the reference's rule (numerics.md section 2)"))
    return keys, classes


def _as_float(bits, dest):
    bits = np.asarray(bits)
    if dest == "fp32":
        return bits.astype(np.uint32).view(np.float32)
    if dest == "fp16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float32)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def code_category(fmt, codes):
    v = fmt.table[np.asarray(codes, dtype=np.intp)].astype(np.float64)
    out = np.full(v.shape, "normal code", dtype=object)
    out[np.abs(v) < fmt.min_normal] = "subnormal code"
    out[v == 0] = "zero code"
    out[np.isinf(v)] = "infinity code"
    out[np.isnan(v)] = "NaN code"
    if fmt.unsigned_pow2:
        out[~np.isnan(v)] = "power-of-two code"
    return out


def decode_classes(fmt, codes, ref, got, dest):
    """As encode_classes, for decoding `codes` to dest bit patterns."""
    both_nan = np.isnan(_as_float(ref, dest)) & np.isnan(_as_float(got, dest))
    verdicts = np.where(both_nan, CONVENTION, WRONG).astype(object)
    names = code_category(fmt, codes)
    names[both_nan] = NAN_PAYLOAD[0]
    explain = {}
    for verdict, name in set(zip(verdicts, names)):
        explain[(verdict, name)] = NAN_PAYLOAD[1] if verdict == CONVENTION else (
            "every code has one exact value (OCP FP8 v1.0 / OCP MX v1.0; numerics.md section 3), rounded to "
            f"nearest even when {dest} cannot hold it")
    return verdicts, names, explain
