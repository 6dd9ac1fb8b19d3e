"""octet.audit: other implementations' FP8 numerics checked against
Octet's reference (docs/audit.md).

    python -m octet.audit torch --quick          # or: octet audit torch --quick
    report = octet.audit.run("onnxruntime", mode="quick")
    print(report.text()); report.to_json(); report.exit_status

A target's package (torch, torchao, onnxruntime, transformer_engine) is
imported only when that target is run; a missing one is reported as not
run, with its install command. An implementation given as Python
functions is checked with run_custom(name, [checks.encode(...), ...]).

Modules: formats (the formats and input categories), inputs (what is
fed), rules (how a disagreement is judged, from the specs), casts,
quantize, scaled (quantizers with their own scales), gemm (the checks), checks (Check, Unsupported, run_checks),
report (verdicts, text, JSON), runner (targets), main (the command),
target_* (one per target)."""

from . import checks
from .checks import Check, Unsupported
from .report import BIT_EXACT, CONVENTION, NOT_SUPPORTED, WITHIN_BOUND, WRONG, Report
from .runner import DEVICES, MODES, TARGETS, run, run_custom

__all__ = ["checks", "Check", "Unsupported", "Report", "run", "run_custom", "TARGETS", "MODES", "DEVICES",
           "BIT_EXACT", "WITHIN_BOUND", "CONVENTION", "WRONG", "NOT_SUPPORTED"]
