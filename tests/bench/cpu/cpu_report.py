"""Pure-Python half of bench_cpu_vs_torch.py: issue 14's targets, the
markdown tables, the plot's data, the machine class, and the generated
section of docs/benchmarks.md for that class. Imports neither numpy, torch nor octet, so
test_cpu_report.py checks it on any machine.

Conventions (docs/benchmarks.md; performance.md):
  - every ratio compares timings taken in the same process and the same
    interleaved rounds;
  - a ratio > 1 means "Octet is better": the peer's time over Octet FP8's,
    or for bandwidth Octet's GB/s over the baseline's;
  - a target is a minimum for its ratio; "met" is yes / **no** / not
    measured (the peer did not run: torch absent, no C++ benchmark).
"""

import json
import re
import statistics
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

# The CPU classes this project is built on, best first; docs/benchmarks.md
# keeps one current section per class, between the class's own markers.
MACHINE_CLASSES = ("AMX", "AVX-512 BF16", "AVX-512", "AVX2")
MACHINE_CLASS_NAMES = {
    "AMX": "AMX (amx_tile, amx_bf16: Sapphire/Emerald Rapids-class Xeon)",
    "AVX-512 BF16": "AVX-512 BF16 without AMX (e.g. AMD Zen 4)",
    "AVX-512": "AVX-512 without BF16 (e.g. Intel Ice Lake)",
    "AVX2": "AVX2 without AVX-512",
}

GEMM_SHAPES = [(2048, 2048, 2048), (1, 8192, 8192), (16, 8192, 8192), (32, 8192, 8192)]
LINEAR_WORK = "Linear 4096^3 fwd+bwd"
OURS_GEMM = "octet_fp8"
OURS_LINEAR = "octet_fp8_current"


def gemm_work(m: int, n: int, k: int) -> str:
    return f"GEMM {m}x{n}x{k}"


@dataclass
class Row:
    """One candidate's timing of one work item."""
    work: str
    candidate: str
    seconds: float
    rate: float          # GFLOP/s
    speedup: float       # the candidate's time over Octet FP8's (1 for Octet itself)
    note: str = ""


@dataclass
class Target:
    text: str
    minimum: float
    measured: Optional[float]

    @property
    def verdict(self) -> str:
        if self.measured is None:
            return "not measured"
        return "yes" if self.measured >= self.minimum else "**no**"


def rows_from_times(work: str, ours: str, seconds: Dict[str, float], flops: float,
                    notes: Optional[Dict[str, str]] = None) -> List[Row]:
    """Rows for one work item from {candidate: median seconds} of one
    interleaved run; `ours` names Octet FP8's candidate."""
    if ours not in seconds:
        raise ValueError(f"seconds: no timing for Octet's candidate {ours!r}")
    base = seconds[ours]
    notes = notes or {}
    return [Row(work, name, sec, flops / sec / 1e9, sec / base, notes.get(name, ""))
            for name, sec in seconds.items()]


def speedup_of(rows: Sequence[Row], work: str, candidate: str) -> Optional[float]:
    for r in rows:
        if r.work == work and r.candidate == candidate:
            return r.speedup
    return None


def demo_ms_per_step(text: str) -> Dict[str, float]:
    """{precision: ms/step} from `octet demo`'s results table: the header
    line starts with "precision", and each precision's line has its
    ms/step right-aligned under the header's "ms/step"; a row that did not
    run has no number there and is left out."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not (line.startswith("precision") and "ms/step" in line):
            continue
        end = line.index("ms/step") + len("ms/step")  # the numbers are right-aligned under it
        out = {}
        for row in lines[i + 1:]:
            if not row.strip():
                break
            for m in re.finditer(r"\S+", row):
                if m.end() == end:
                    try:
                        out[row.split()[0]] = float(m.group())
                    except ValueError:
                        pass
        return out
    raise ValueError("demo output: no results table (a line starting with 'precision ... ms/step')")


def benchmark_counters(json_text: str) -> Dict[str, Dict[str, float]]:
    """{run name: counters} from Google Benchmark's --benchmark_format=json,
    the median aggregate where there are repetitions."""
    data = json.loads(json_text)
    out: Dict[str, Dict[str, float]] = {}
    for b in data.get("benchmarks", []):
        name = b.get("run_name", b["name"])
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        counters = {k: float(v) for k, v in b.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if b.get("run_type") == "aggregate" or name not in out:
            out[name] = counters
    return out


def issue_targets(rows: Sequence[Row], read_gbps: Optional[float], m1_weight_gbps: Optional[float],
                  quantize_ratios: Dict[str, Optional[float]], demo_ms: Dict[str, float]) -> List[Target]:
    """Issue 14's targets from one run's measurements. quantize_ratios:
    {"mxfp8" | "1x128" | "128x128" | "cast_transpose": ratio to memcpy or None}."""
    g2048, g1, g16 = gemm_work(2048, 2048, 2048), gemm_work(1, 8192, 8192), gemm_work(16, 8192, 8192)
    t = [
        Target("FP8 GEMM 2048^3 >= 1.0x torch BF16 matmul", 1.0, speedup_of(rows, g2048, "torch_bf16")),
        Target("FP8 GEMM 2048^3 >= 1.8x oneDNN sgemm", 1.8, speedup_of(rows, g2048, "onednn_sgemm")),
        Target("FP8 GEMM M=1, N=K=8192 >= 1.5x torch BF16 matmul", 1.5, speedup_of(rows, g1, "torch_bf16")),
        Target("FP8 GEMM M=16, N=K=8192 >= 1.5x torch BF16 matmul", 1.5, speedup_of(rows, g16, "torch_bf16")),
        Target("M=1 reads its weights at >= 0.7 of the read bandwidth", 0.7,
               m1_weight_gbps / read_gbps if read_gbps and m1_weight_gbps else None),
        Target("Linear 4096^3 fwd+bwd >= 1.2x torch BF16 autocast", 1.2,
               speedup_of(rows, LINEAR_WORK, "torch_linear_bf16_autocast")),
        Target("Linear 4096^3 fwd+bwd >= 1.8x Octet FP32", 1.8, speedup_of(rows, LINEAR_WORK, "octet_fp32")),
        # octet.torch over the layer: at most 1.1x the layer's time, so the
        # ratio (the layer's time over the module's) is at least 1 / 1.1.
        Target("octet.torch.Linear 4096^3 fwd+bwd FP8 costs <= 1.1x the octet layer", 1 / 1.1,
               _inverse(speedup_of(rows, LINEAR_WORK, "octet_torch_fp8_current"))),
    ]
    for key, text, minimum in (("mxfp8", "MXFP8 quantize (both usages) >= 0.5 of memcpy", 0.5),
                               ("1x128", "1x128 block quantize (both usages) >= 0.5 of memcpy", 0.5),
                               ("128x128", "128x128 block quantize (both usages) >= 0.5 of memcpy", 0.5),
                               ("cast_transpose", "cast+transpose with amax >= 0.7 of memcpy", 0.7)):
        t.append(Target(text, minimum, quantize_ratios.get(key)))
    fp32 = demo_ms.get("fp32")
    for name, ms in demo_ms.items():
        if name.startswith("fp8"):
            # ms/step of FP32 over this row's: > 1 when the FP8 row is faster.
            t.append(Target(f"octet demo --backend cpu: {name} ms/step below fp32's", 1.0 + 1e-12,
                            fp32 / ms if fp32 and ms > 0 else None))
    return t


def _inverse(v: Optional[float]) -> Optional[float]:
    return 1.0 / v if v else None


def _fmt(v: Optional[float], unit: str = "x") -> str:
    return "-" if v is None else f"{v:.2f}{unit}"


def render_rows(rows: Sequence[Row]) -> str:
    out = ["| work | candidate | ms | GFLOP/s | Octet FP8 speed-up over it |", "|---|---|---|---|---|"]
    for r in rows:
        name = f"{r.candidate} ({r.note})" if r.note else r.candidate
        out.append(f"| {r.work} | {name} | {r.seconds * 1e3:.2f} | {r.rate:.1f} | {r.speedup:.2f}x |")
    return "\n".join(out)


def render_targets(targets: Sequence[Target]) -> str:
    out = ["| target | measured ratio | met |", "|---|---|---|"]
    for t in targets:
        out.append(f"| {t.text} | {_fmt(t.measured)} | {t.verdict} |")
    return "\n".join(out)


def plot_data(rows: Sequence[Row]) -> Tuple[List[str], List[str], Dict[Tuple[str, str], float]]:
    """(groups, series, values) for svg_bars.grouped_bars_svg: GFLOP/s by
    work item for each candidate, in the order measured."""
    groups: List[str] = []
    series: List[str] = []
    values: Dict[Tuple[str, str], float] = {}
    for r in rows:
        if r.work not in groups:
            groups.append(r.work)
        label = "octet_fp8" if r.candidate == OURS_LINEAR else r.candidate
        if label not in series:
            series.append(label)
        values[(r.work, label)] = r.rate
    return groups, series, values


def cpu_flags(cpuinfo: str) -> frozenset:
    """The feature flags of the first processor in /proc/cpuinfo's text."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def machine_class(flags) -> str:
    """One of MACHINE_CLASSES (or "below AVX2") from a CPU's feature flags."""
    f = set(flags)
    if {"amx_tile", "amx_bf16"} <= f:
        return "AMX"
    if {"avx512f", "avx512_bf16"} <= f:
        return "AVX-512 BF16"
    if "avx512f" in f:
        return "AVX-512"
    if "avx2" in f:
        return "AVX2"
    return "below AVX2"


def class_marks(cls: str) -> Tuple[str, str]:
    """The begin and end markers of machine class `cls`'s section."""
    if cls not in MACHINE_CLASSES:
        raise ValueError(f"machine class {cls!r} is not one of {MACHINE_CLASSES}")
    return (f"<!-- bench_cpu_vs_torch: {cls}: generated section, begin -->",
            f"<!-- bench_cpu_vs_torch: {cls}: generated section, end -->")


def replace_class_section(document: str, cls: str, section: str) -> str:
    """document with class `cls`'s section (between its markers) replaced by
    `section`; the other classes' sections and the rest are kept. A class
    with no section yet gets one, under a heading naming it, placed before
    the section of the next class in MACHINE_CLASSES order that has one, or
    at CLASSES_END_MARK."""
    begin, end = class_marks(cls)
    if document.count(begin) == 1 and document.count(end) == 1:
        head, rest = document.split(begin)
        if end not in rest:
            raise ValueError(f"document: {begin!r} must come before {end!r}")
        _, tail = rest.split(end)
        return head + begin + "\n" + section.strip("\n") + "\n" + end + tail
    if document.count(begin) or document.count(end):
        raise ValueError(f"document: needs exactly one {begin!r} and one {end!r}, or neither")
    block = f"### {MACHINE_CLASS_NAMES[cls]}\n\n{begin}\n{section.strip(chr(10))}\n{end}\n\n"
    for later in MACHINE_CLASSES[MACHINE_CLASSES.index(cls) + 1:]:
        heading = f"### {MACHINE_CLASS_NAMES[later]}\n"
        if heading in document:
            at = document.index(heading)
            return document[:at] + block + document[at:]
    if document.count(CLASSES_END_MARK) != 1:
        raise ValueError(f"document: needs exactly one {CLASSES_END_MARK!r}")
    at = document.index(CLASSES_END_MARK)
    return document[:at] + block + document[at:]


CLASSES_END_MARK = "<!-- bench_cpu_vs_torch: machine classes end -->"


def plot_file(cls: str) -> str:
    """The plot of class `cls`'s section, relative to docs/."""
    class_marks(cls)  # checks the name
    return "img/bench_cpu_vs_torch_" + cls.lower().replace(" ", "_") + ".svg"


def emulated(rate: float, native_rate: float, factor: float = 20.0) -> bool:
    """Whether a candidate's probe rate (work per second) is below
    1/`factor` of the native peer's in the same probe: the sign that the
    library runs it emulated, element by element (torch._scaled_mm on a CPU
    without native FP8 kernels), where timing it at full size would take
    minutes and say nothing about FP8 GEMMs."""
    return rate * factor < native_rate


def interleaved(cands, rounds):
    """Median seconds of each candidate (name -> callable): one warm-up
    call each, then `rounds` rounds calling every candidate once in turn."""
    times = {k: [] for k in cands}
    for fn in cands.values():
        fn()
    for _ in range(rounds):
        for k, fn in cands.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}
