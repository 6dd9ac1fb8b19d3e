"""Pure-Python half of bench_cuda.py: arguments, shapes, ratios, targets and
the markdown report. Imports neither torch nor numpy, so it is unit-tested
(test_bench_report.py) on machines without a GPU.

Conventions (docs/benchmarks.md, /work/shared/design/performance.md):
  - every ratio compares two timings taken in the same process, interleaved
    repetition by repetition (bench_cuda.time_interleaved);
  - a ratio > 1 always means "Octet is better": for times it is
    baseline_time / octet_time, for bandwidth octet_GB/s / baseline_GB/s;
  - a row's target is a minimum for that ratio; "met" is yes / **no** /
    **error** (the op failed) / - (no target, information only).
"""

import argparse
import math
import statistics
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

# Issue targets (ratio minimums).
TARGET_GEMM_VS_BF16 = 1.7         # FP8 GEMM vs torch.mm BF16 (8192^3)
TARGET_GEMM_VS_SCALED_MM = 0.95   # FP8 GEMM vs torch._scaled_mm (all GEMM shapes)
TARGET_CAST_VS_COPY = 0.80        # cast+transpose bandwidth vs D2D copy of the same bytes
TARGET_CAST_VS_EAGER = 3.0        # cast+transpose vs eager torch amax+scale+cast(+transpose)
TARGET_LINEAR_VS_BF16 = 1.3       # Linear fwd+bwd FP8 vs BF16 (16384 tokens, 8192 -> 8192)

# (M tokens, K hidden, N out) as performance.md names them.
GEMM_SHAPES_FULL = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 8192, 28672)]
GEMM_SHAPES_QUICK = [(512, 512, 512), (1024, 2048, 1536)]
# The shape where the 1.7x-vs-BF16 target applies (the issue names 8192^3).
GEMM_BF16_TARGET_SHAPES = {(8192, 8192, 8192)}

# (rows, cols) of the BF16 input of cast+transpose.
QUANTIZE_SHAPES_FULL = [(8192, 8192), (16384, 8192)]
QUANTIZE_SHAPES_QUICK = [(1024, 1024), (2048, 1536)]

# (tokens, in_features, out_features)
LINEAR_SHAPES_FULL = [(16384, 8192, 8192)]
LINEAR_SHAPES_QUICK = [(1024, 1024, 1024)]
LINEAR_TARGET_SHAPES = {(16384, 8192, 8192)}

SECTIONS = ("gemm", "quantize", "linear")
LINEAR_RECIPES = ("current", "delayed")
PROFILE_OPS = ("gemm", "scaled_mm", "mm", "quantize", "quantize_current", "copy", "eager_quantize",
               "linear", "linear_bf16")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench_cuda.py",
        description="Octet cuda backend vs PyTorch on the same CUDA stream: FP8 GEMM, "
                    "cast+transpose, Linear fwd+bwd. Ratios measured in the same run.")
    p.add_argument("--lib", default=None,
                   help="path of liboctet.so (default: $OCTET_LIBRARY, else build-gpu/, build/, "
                        "build-gpub/ under the repository root)")
    p.add_argument("--out", default=None, help="write the markdown report to this file")
    p.add_argument("--quick", action="store_true", help="small shapes, few repetitions")
    p.add_argument("--check", action="store_true",
                   help="only the numerics checks of every Octet op against torch (small shapes)")
    p.add_argument("--no-check", action="store_true",
                   help="skip the numerics checks that otherwise run before timing")
    p.add_argument("--sections", default=",".join(SECTIONS),
                   help="comma-separated subset of: " + ",".join(SECTIONS))
    p.add_argument("--linear-recipes", default=",".join(LINEAR_RECIPES),
                   help="comma-separated subset of: " + ",".join(LINEAR_RECIPES))
    p.add_argument("--warmup", type=int, default=None, help="warm-up calls per op (default 5; quick 2)")
    p.add_argument("--iters", type=int, default=None,
                   help="calls per timed repetition (default 20; quick 5)")
    p.add_argument("--reps", type=int, default=None,
                   help="timed repetitions, the median is reported (default 7; quick 3)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--profile-op", choices=PROFILE_OPS, default=None,
                   help="run one op between cudaProfilerStart/Stop after warm-up, for "
                        "`ncu --profile-from-start off` (no report)")
    p.add_argument("--kernel-table", action="store_true",
                   help="with --profile-op: instead of the profiler range, print torch.profiler's table "
                        "of the kernels one call launches, with their device times")
    p.add_argument("--profile-shape", default=None,
                   help="shape for --profile-op, e.g. 8192x8192x8192 (GEMM: MxKxN; quantize: "
                        "ROWSxCOLS; linear: TOKENSxINxOUT); default the main target shape")
    p.add_argument("--backend", default="cuda",
                   help="host dry run (a development aid without a GPU): the checks and, without "
                        "--check, the whole benchmark on a host backend (reference, cpu) with CPU "
                        "torch tensors and host timers; its timings mean nothing")
    p.add_argument("--strict-targets", action="store_true",
                   help="exit 2 when a target is missed (default: only errors fail)")
    return p


@dataclass
class Settings:
    warmup: int
    iters: int
    reps: int
    sections: Tuple[str, ...]
    linear_recipes: Tuple[str, ...]
    gemm_shapes: List[Tuple[int, int, int]]
    quantize_shapes: List[Tuple[int, int]]
    linear_shapes: List[Tuple[int, int, int]]


def _split_choice(text: str, allowed: Sequence[str], what: str) -> Tuple[str, ...]:
    items = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [s for s in items if s not in allowed]
    if bad or not items:
        raise SystemExit(f"bench_cuda.py: bad {what} {bad or text!r}; choose from {','.join(allowed)}")
    return items


def settings_from_args(args) -> Settings:
    quick = bool(args.quick)
    s = Settings(
        warmup=args.warmup if args.warmup is not None else (2 if quick else 5),
        iters=args.iters if args.iters is not None else (5 if quick else 20),
        reps=args.reps if args.reps is not None else (3 if quick else 7),
        sections=_split_choice(args.sections, SECTIONS, "--sections"),
        linear_recipes=_split_choice(args.linear_recipes, LINEAR_RECIPES, "--linear-recipes"),
        gemm_shapes=list(GEMM_SHAPES_QUICK if quick else GEMM_SHAPES_FULL),
        quantize_shapes=list(QUANTIZE_SHAPES_QUICK if quick else QUANTIZE_SHAPES_FULL),
        linear_shapes=list(LINEAR_SHAPES_QUICK if quick else LINEAR_SHAPES_FULL),
    )
    for name in ("warmup", "iters", "reps"):
        if getattr(s, name) < (0 if name == "warmup" else 1):
            raise SystemExit(f"bench_cuda.py: --{name} must be >= {0 if name == 'warmup' else 1}")
    return s


def parse_args(argv=None):
    args = build_parser().parse_args(argv)
    if args.check and args.no_check:
        raise SystemExit("bench_cuda.py: --check and --no-check exclude each other")
    if args.kernel_table and not args.profile_op:
        raise SystemExit("bench_cuda.py: --kernel-table needs --profile-op")
    return args


def parse_shape(text: str, ndim: int) -> Tuple[int, ...]:
    parts = text.lower().replace("*", "x").split("x")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise SystemExit(f"bench_cuda.py: bad shape {text!r}") from None
    if len(dims) != ndim or any(d < 1 for d in dims):
        raise SystemExit(f"bench_cuda.py: shape {text!r} needs {ndim} positive dimensions")
    return dims


# ---- arithmetic ------------------------------------------------------------

def median(values: Sequence[float]) -> float:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return float("nan")
    return statistics.median(vals)


def gemm_flops(m: int, k: int, n: int) -> float:
    return 2.0 * m * k * n


def linear_fwd_bwd_flops(tokens: int, k: int, n: int) -> float:
    """y = x W^T, dx = dy W, dW = dy^T x: three GEMMs of 2*T*K*N each."""
    return 3.0 * gemm_flops(tokens, k, n)


def tflops(flops: float, ms: float) -> float:
    if not ms or ms <= 0 or math.isnan(ms):
        return float("nan")
    return flops / (ms * 1e-3) / 1e12


def gbps(nbytes: float, ms: float) -> float:
    if not ms or ms <= 0 or math.isnan(ms):
        return float("nan")
    return nbytes / (ms * 1e-3) / 1e9


def speedup(ours_ms: float, baseline_ms: float) -> float:
    """baseline time / our time (> 1: we are faster)."""
    if ours_ms is None or baseline_ms is None or ours_ms <= 0 or math.isnan(ours_ms) or math.isnan(baseline_ms):
        return float("nan")
    return baseline_ms / ours_ms


def bandwidth_fraction(ours_bytes: float, ours_ms: float, base_bytes: float, base_ms: float) -> float:
    """Our GB/s over the baseline's GB/s."""
    ours, base = gbps(ours_bytes, ours_ms), gbps(base_bytes, base_ms)
    if math.isnan(ours) or math.isnan(base) or base <= 0:
        return float("nan")
    return ours / base


def verdict(ratio: Optional[float], target: Optional[float], error: Optional[str] = None) -> str:
    if error:
        return "**error**"
    if target is None:
        return "-"
    if ratio is None or math.isnan(ratio):
        return "**error**"
    return "yes" if ratio >= target else "**no**"


# ---- rows and the report ----------------------------------------------------

@dataclass
class Row:
    section: str              # "gemm", "quantize", "linear"
    benchmark: str            # e.g. "FP8 GEMM E4M3xE4M3->BF16"
    shape: str                # e.g. "8192x8192x8192"
    ours_ms: float
    ours_rate: str            # "1234.5 TFLOP/s" or "3012 GB/s"
    baseline: str             # e.g. "torch.mm BF16"
    baseline_ms: float
    baseline_rate: str
    ratio: float
    target: Optional[float]   # minimum ratio, None = information only
    ratio_kind: str = "x"     # "x" (speed-up) or "of BW" (bandwidth fraction)
    error: Optional[str] = None
    note: str = ""

    @property
    def met(self) -> str:
        return verdict(self.ratio, self.target, self.error)


def fmt_ms(ms: Optional[float]) -> str:
    if ms is None or math.isnan(ms):
        return "n/a"
    if ms >= 100:
        return f"{ms:.1f} ms"
    if ms >= 1:
        return f"{ms:.3f} ms"
    return f"{ms * 1000:.1f} us"


def fmt_rate(value: float, unit: str) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    if value >= 100:
        return f"{value:.0f} {unit}"
    if value >= 10:
        return f"{value:.1f} {unit}"
    return f"{value:.3g} {unit}"


def fmt_ratio(ratio: float, kind: str = "x") -> str:
    if ratio is None or math.isnan(ratio):
        return "n/a"
    if kind == "x":
        return f"{ratio:.3f}x"
    return f"{ratio:.3f} {kind}"


def fmt_target(target: Optional[float], kind: str = "x") -> str:
    if target is None:
        return "(info)"
    return f">= {target:g}x" if kind == "x" else f">= {target:g} {kind}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_table(rows: Sequence[Row]) -> str:
    head = ("| benchmark | shape | Octet | baseline | Octet time | baseline time | ratio | target | met |\n"
            "|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        ours = r.ours_rate if not r.error else "error"
        lines.append("| " + " | ".join(_cell(c) for c in (
            r.benchmark, r.shape, ours, f"{r.baseline} {r.baseline_rate}".strip(),
            fmt_ms(r.ours_ms), fmt_ms(r.baseline_ms), fmt_ratio(r.ratio, r.ratio_kind),
            fmt_target(r.target, r.ratio_kind), r.met)) + " |")
    return head + "\n".join(lines) + ("\n" if lines else "")


def summarize(rows: Sequence[Row]) -> dict:
    out = {"met": 0, "missed": 0, "errors": 0, "info": 0}
    for r in rows:
        v = r.met
        if v == "yes":
            out["met"] += 1
        elif v == "**no**":
            out["missed"] += 1
        elif v == "**error**":
            out["errors"] += 1
        else:
            out["info"] += 1
    return out


def summary_line(rows: Sequence[Row]) -> str:
    s = summarize(rows)
    return (f"TARGETS: {s['met']} met, {s['missed']} missed, {s['errors']} errors, "
            f"{s['info']} information rows")


def exit_status(rows: Sequence[Row], checks_failed: int, strict_targets: bool) -> int:
    """1: a check or an op failed; 2: (strict) a target was missed; 0 otherwise."""
    s = summarize(rows)
    if checks_failed or s["errors"]:
        return 1
    if strict_targets and s["missed"]:
        return 2
    return 0


@dataclass
class CheckResult:
    name: str
    ok: bool
    detail: str


def render_checks(checks: Sequence[CheckResult]) -> str:
    if not checks:
        return "Numerics checks: not run.\n"
    lines = ["| numerics check | result | detail |", "|---|---|---|"]
    for c in checks:
        lines.append(f"| {_cell(c.name)} | {'ok' if c.ok else '**FAILED**'} | {_cell(c.detail)} |")
    return "\n".join(lines) + "\n"


@dataclass
class Environment:
    device: str = "unknown"
    compute_capability: str = "unknown"
    sm_count: str = "unknown"
    memory: str = "unknown"
    driver: str = "unknown"
    torch_version: str = "unknown"
    torch_cuda: str = "unknown"
    octet_version: str = "unknown"
    octet_backend: str = "unknown"
    octet_commit: str = "unknown"
    date: str = "unknown"
    command: str = ""
    limits: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def render_report(env: Environment, settings: Optional[Settings], rows: Sequence[Row],
                  checks: Sequence[CheckResult]) -> str:
    out = ["# Octet cuda backend vs PyTorch (tests/bench/gpu/bench_cuda.py)", ""]
    out += [
        f"- Device: {env.device} (SM {env.compute_capability}, {env.sm_count} SMs, {env.memory}); "
        f"driver {env.driver}",
        f"- PyTorch {env.torch_version} (CUDA {env.torch_cuda}); Octet {env.octet_version}, "
        f"backend: {env.octet_backend}",
        f"- Octet commit: {env.octet_commit}; date: {env.date}",
        f"- Command: `{env.command}`",
    ]
    if settings is not None:
        out.append(f"- Timing: torch.cuda.Event on the shared stream, {settings.warmup} warm-up calls, "
                   f"median over {settings.reps} repetitions of {settings.iters} calls; Octet and "
                   f"its baselines interleaved repetition by repetition")
    for line in env.limits:
        out.append(f"- {line}")
    for line in env.notes:
        out.append(f"- Note: {line}")
    out.append("")
    out.append(render_checks(checks))
    if rows:
        out.append(render_table(rows))
        out.append(summary_line(rows))
        errors = [r for r in rows if r.error]
        if errors:
            out.append("")
            out.append("Errors:")
            for r in errors:
                out.append(f"- {r.benchmark} {r.shape}: {r.error}")
        seen, notes = set(), []
        for r in rows:
            if r.note and not r.error and (r.benchmark, r.shape, r.note) not in seen:
                seen.add((r.benchmark, r.shape, r.note))
                notes.append(f"- {r.benchmark} {r.shape}: {r.note}")
        if notes:
            out.append("")
            out.append("Row notes:")
            out += notes
    return "\n".join(out).rstrip() + "\n"
