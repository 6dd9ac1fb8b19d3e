"""A check: one operation of a target, and how it is run against the
reference. Targets (the target_*.py modules) describe their operations
as checks; run_checks turns them into a TargetResult."""

from . import casts, gemm, quantize
from .report import Operation, TargetResult


class Unsupported(Exception):
    """Raised by a target's function when its implementation refuses the
    operation on this device (not run, never wrong)."""


class Check:
    def __init__(self, name, kind, run, **details):
        self.name, self.kind, self.run, self.details = name, kind, run, details


def encode(name, fmt, source, saturate, fn, target_rules=None):
    """fn: data of `source` ("fp32", "bf16" bit patterns, "fp16") -> codes."""
    return Check(name, "cast", lambda op, mode: casts.check_encode(op, fn, casts_format(fmt), source, saturate, mode,
                                                                   target_rules),
                 format=fmt, source=source)


def decode(name, fmt, dest, fn):
    """fn: codes (uint8) -> dest ("fp32", "bf16", "fp16") bit patterns."""
    return Check(name, "cast", lambda op, mode: casts.check_decode(op, fn, casts_format(fmt), dest),
                 format=fmt, dest=dest)


def gemm_check(name, fmt_a, fmt_b, scaling, out, fn):
    return Check(name, "gemm", lambda op, mode: gemm.check_gemm(op, fn, fmt_a, fmt_b, scaling, out, mode),
                 formats=[fmt_a, fmt_b], scaling=scaling, out=out)


def quantize_check(name, fmt, granularity, saturate, fn):
    return Check(name, "quantize", lambda op, mode: quantize.check_quantize(op, fn, fmt, granularity, saturate,
                                                                           mode),
                 format=fmt, granularity=granularity)


def dequantize_check(name, fmt, granularity, fn):
    return Check(name, "dequantize", lambda op, mode: quantize.check_dequantize(op, fn, fmt, granularity),
                 format=fmt, granularity=granularity)


def casts_format(name):
    from .formats import FORMATS
    if name not in FORMATS:
        raise ValueError(f"format must be one of {sorted(FORMATS)}; got {name!r}")
    return FORMATS[name]


def unsupported(name, kind, reason, **details):
    """A check of an operation the target does not offer here."""
    def run(op, mode):
        raise Unsupported(reason)
    return Check(name, kind, run, **details)


def run_checks(target, device, version, checks, mode, progress=None):
    result = TargetResult(target, device, version)
    for check in checks:
        op = Operation(check.name, check.kind, **check.details)
        if progress:
            progress(f"{target}: {check.name}")
        try:
            check.run(op, mode)
        except Unsupported as e:
            op.unsupported = str(e) or "not supported on this device"
        result.operations.append(op)
    return result
