"""Runs named targets: imports each target's package only then, reports
a missing one as not run (with its install command)."""

import importlib
import platform

import numpy as np

from .. import _core as octet
from . import checks
from .report import Report, TargetResult

TARGETS = ("torch", "torchao", "onnxruntime", "transformer_engine")
MODES = ("quick", "full")
DEVICES = ("cpu", "cuda")


def _validate(targets, mode, device):
    if isinstance(targets, str):
        targets = [targets]
    for t in targets:
        if t not in TARGETS:
            raise ValueError(f"target must be one of {', '.join(TARGETS)}; got {t!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be 'quick' or 'full'; got {mode!r}")
    if device not in DEVICES:
        raise ValueError(f"device must be 'cpu' or 'cuda'; got {device!r}")
    return list(targets)


def audit_target(name, mode="full", device="cpu", progress=None):
    """One target's TargetResult (not run when its package is missing or the
    device is not available to it)."""
    module = importlib.import_module(f".target_{name}", __package__)
    try:
        package, version = module.load()
    except ImportError as e:
        return TargetResult(name, device, status="not run", reason=f"{name} is not installed ({e})",
                            install=module.INSTALL)
    problem = module.device_problem(package, device)
    if problem:
        return TargetResult(name, device, version, status="not run", reason=problem)
    return checks.run_checks(name, device, version, module.build(package, device), mode, progress)


def environment():
    return {"machine": platform.machine(), "processor": platform.processor() or None,
            "python": platform.python_version(), "numpy": np.__version__}


def run(targets, mode="full", device="cpu", progress=None):
    """A Report of the named targets ("torch", "torchao", "onnxruntime",
    "transformer_engine", or a list of them)."""
    targets = _validate(targets, mode, device)
    report = Report(mode, octet.library_version() and "{}.{}.{}".format(*octet.library_version()), environment())
    for name in targets:
        report.targets.append(audit_target(name, mode, device, progress))
    return report


def run_custom(name, check_list, mode="quick", device="cpu", version=None):
    """A Report of checks of an implementation given as Python functions
    (checks.encode, checks.decode, checks.gemm_check, ...)."""
    _validate([], mode, device)
    report = Report(mode, "{}.{}.{}".format(*octet.library_version()), environment())
    report.targets.append(checks.run_checks(name, device, version, check_list, mode))
    return report
