"""Re-judges the audit's reported examples with the independent encoders
of spec.py: a class reported wrong must violate the spec, a convention
class must be one the specs leave open."""

import math

import numpy as np

import spec


def input_value(text, source):
    bits = int(text.split()[0], 16)
    if source == "fp32":
        return float(np.uint32(bits).view(np.float32))
    if source == "fp16":
        return float(np.uint16(bits).view(np.float16))
    return float((np.uint32(bits) << 16).view(np.float32))


def code_of(text):
    return int(text.split()[0], 16)


def encode_verdict_errors(op, saturate):
    """Messages for every example of `op` (an encode check's JSON) whose
    class contradicts spec.encode in the given mode."""
    fmt, source = op["details"]["format"], op["details"]["source"]
    errors = []
    for cls in op["classes"]:
        for ex in cls["examples"]:
            x = input_value(ex["input"], source)
            got, want = code_of(ex["target"]), spec.encode(fmt, x, saturate)
            both_nan = spec.is_nan_code(fmt, got) and spec.is_nan_code(fmt, want)
            if cls["verdict"] == "wrong" and (got == want or both_nan):
                errors.append(f"{op['name']}: {ex} reported wrong but the spec gives {want:#04x}")
            if cls["verdict"] != "wrong" and not both_nan:
                errors.append(f"{op['name']}: {ex} reported as a convention but the spec gives {want:#04x}")
    return errors


def independent_mismatches(fmt, values, codes, saturate):
    """Inputs where codes differ from spec.encode (NaN for NaN excepted)."""
    bad = []
    for x, c in zip(values.tolist(), codes.tolist()):
        want = spec.encode(fmt, x, saturate)
        if c != want and not (spec.is_nan_code(fmt, c) and spec.is_nan_code(fmt, want)):
            bad.append((x, c, want))
    return bad


def decode_errors(op):
    fmt = op["details"]["format"]
    errors = []
    for cls in op["classes"]:
        for ex in cls["examples"]:
            code = code_of(ex["input"])
            got = input_value(ex["target"], op["details"]["dest"])
            want = spec.decode(fmt, code)
            same = got == want or (math.isnan(got) and math.isnan(want))
            if cls["verdict"] == "wrong" and same:
                errors.append(f"{op['name']}: {ex} reported wrong but decodes to {want}")
            if cls["verdict"] != "wrong" and not (math.isnan(got) and math.isnan(want)):
                errors.append(f"{op['name']}: {ex} reported as a convention but is not NaN for NaN")
    return errors
