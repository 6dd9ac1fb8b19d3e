#!/usr/bin/env python3
"""Octet's cpu backend against the peers a CPU user would otherwise pick, in
one process and one run (docs/benchmarks.md; performance.md's rules).

    OCTET_LIBRARY=build/lib/liboctet.so PYTHONPATH=api/python \\
        python3 tests/bench/cpu/bench_cpu_vs_torch.py [--write-docs] [--quick]

First, per-tensor FP32 -> E4M3 quantize of 4096 x 4096 with current
scaling (amax, scale = 448 / amax, cast): Octet rowwise and Octet's fused
cast+transpose (Hopper-like profile, both copies) against torch eager
(x * s).clamp(-448, 448).to(torch.float8_e4m3fn) (and the same plus a
transposed copy), each as a time relative to a numpy memcpy of the FP32
input in the same rounds. --quantize-only stops there.

Then the bandwidths the decode shapes are compared with: a memcpy of 256
MiB (numpy; bytes read + written), and the read bandwidth, the faster of
Octet's amax kernel and torch.sum over 256 MiB of FP32 (reads only); and
one core's peak rates of VDPBF16PS and 512-bit FMA (octet_bench_cpu's
BM_PeakDpbf16VsFma), whose multiply-add ratio bounds what an FP8 GEMM on
BF16 dot products can gain over an FP32 sgemm on this CPU.

For each GEMM shape (E4M3 x E4M3 -> FP32 on Octet's cpu backend, scales
applied) it times, interleaved round by round (each candidate once per
round, the median over rounds reported): Octet FP8, torch FP32 matmul,
torch BF16 matmul, torch._scaled_mm (E4M3, FP32 out; only where this
torch runs it natively on the CPU: a probe drops it, saying why, where it
is emulated or would take over 5 s a call), and oneDNN's dnnl_sgemm on FP32 operands called through
ctypes (the library the cpu backend links). Then Linear 4096 x 4096 ->
4096 forward + backward: Octet FP8 (current scaling), Octet FP32, the
same two as octet.torch.Linear modules (what the torch integration costs),
torch nn.Linear FP32 and under BF16 autocast.

Then, from the build beside the library: the block quantize and
cast+transpose ratios to memcpy of octet_bench_cpu (BM_BlockQuantize,
BM_Quantize/3; their own same-iteration memcpy), and `octet demo
--backend cpu`'s ms/step per precision. Last, issue 14's targets, each
with its measured ratio and whether it is met.

Ratios are the peer's time over Octet FP8's, from the same rounds. torch
is installed from PyPI when it is missing (--no-install: run without it;
only the Octet and oneDNN columns then). The first line of the
output names the machine class (cpu_report.machine_class, from
/proc/cpuinfo: AMX, AVX-512 BF16, AVX-512, AVX2). --write-docs replaces
that class's section of docs/benchmarks.md (between its markers; the other
classes' sections stay) with this run's tables and writes the plot,
GFLOP/s by shape for each candidate, to
docs/img/bench_cpu_vs_torch_<class>.svg.
"""
import argparse
import ctypes
import ctypes.util
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
import cpu_report  # noqa: E402
import svg_bars  # noqa: E402

try:
    import octet
except ImportError:  # run from the source tree
    sys.path.insert(0, os.path.join(ROOT, "api", "python"))
    import octet


def load_torch(install):
    try:
        import torch
        return torch
    except ImportError:
        if not install:
            return None
        print("# torch is missing: installing it from PyPI (--no-install runs without it)", flush=True)
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "torch"]
        if subprocess.call(pip) != 0:  # a Debian-managed interpreter refuses plain pip (PEP 668)
            subprocess.check_call(pip + ["--break-system-packages"])
        import torch
        return torch


def load_dnnl():
    for name in ("libdnnl.so.2", "libdnnl.so.3", ctypes.util.find_library("dnnl")):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.dnnl_sgemm.restype = ctypes.c_int
        lib.dnnl_sgemm.argtypes = [ctypes.c_char, ctypes.c_char, ctypes.c_int64, ctypes.c_int64,
                                   ctypes.c_int64, ctypes.c_float, ctypes.c_void_p, ctypes.c_int64,
                                   ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p,
                                   ctypes.c_int64]
        return lib
    return None


def interleaved(candidates, rounds, min_seconds):
    """candidates: {name: fn}. Each round runs every fn once (after one warm-up
    each), repeated until `rounds` rounds and `min_seconds` have passed.
    Returns {name: median seconds}."""
    times = {name: [] for name in candidates}
    for fn in candidates.values():
        fn()
    start = time.perf_counter()
    r = 0
    while r < rounds or (time.perf_counter() - start < min_seconds and r < 50):
        for name, fn in candidates.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
        r += 1
    return {name: statistics.median(v) for name, v in times.items()}


def gemm_case(ctx, torch, dnnl, m, n, k, rounds, min_seconds):
    rng = np.random.default_rng(1)
    a32 = rng.standard_normal((m, k), dtype=np.float32)
    b32 = rng.standard_normal((n, k), dtype=np.float32)
    qa = ctx.quantize(a32, octet.E4M3, scale=64.0, usages=octet.ROWWISE)
    qb = ctx.quantize(b32, octet.E4M3, scale=64.0, usages=octet.ROWWISE)
    out = ctx.empty((m, n), octet.FP32)
    cands = {"octet_fp8": lambda: ctx.gemm(qa, qb, out=out)}
    if dnnl is not None:
        c32 = np.empty((m, n), dtype=np.float32)
        pa, pb, pc = a32.ctypes.data, b32.ctypes.data, c32.ctypes.data

        def sgemm():
            if dnnl.dnnl_sgemm(b"N", b"T", m, n, k, 1.0, pa, k, pb, k, 0.0, pc, n) != 0:
                raise RuntimeError("dnnl_sgemm failed")
        cands["onednn_sgemm"] = sgemm
    if torch is not None:
        ta, tb = torch.from_numpy(a32), torch.from_numpy(b32)
        ta16, tb16 = ta.to(torch.bfloat16), tb.to(torch.bfloat16)
        cands["torch_fp32"] = lambda: torch.matmul(ta, tb.t())
        cands["torch_bf16"] = lambda: torch.matmul(ta16, tb16.t())
        why_not = scaled_mm_verdict(torch, 2.0 * m * n * k)
        if why_not is None:
            fa = (ta * 64).to(torch.float8_e4m3fn)
            fb = (tb * 64).to(torch.float8_e4m3fn)
            s = torch.tensor(1 / 64)
            cands["torch_scaled_mm"] = lambda: torch._scaled_mm(fa, fb.t(), scale_a=s, scale_b=s,
                                                                 out_dtype=torch.float32)
        else:
            print(f"# torch._scaled_mm at {m}x{n}x{k}: not timed ({why_not})")
    return interleaved(cands, rounds, min_seconds)


_SCALED_MM_PROBE = {}


def scaled_mm_verdict(torch, flops, probe=256, limit_seconds=5.0):
    """None when torch._scaled_mm (E4M3, FP32 out) is worth timing on this
    CPU for a GEMM of `flops`, else why not: it fails here, it runs emulated
    (cpu_report.emulated: under 1/20 of torch's BF16 matmul rate in a
    probe^3 GEMM, timed once per run), or one call would take over
    `limit_seconds` at the probe's rate. An emulated torch._scaled_mm used to
    stall the run for tens of minutes at 2048^3 and 8192^2."""
    if "rate" not in _SCALED_MM_PROBE:
        try:
            a = torch.randn(probe, probe)
            b = torch.randn(probe, probe)
            fa, fb = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
            one = torch.tensor(1.0)
            a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
            t = interleaved({"scaled_mm": lambda: torch._scaled_mm(fa, fb.t(), scale_a=one, scale_b=one,
                                                                     out_dtype=torch.float32),
                             "bf16": lambda: torch.matmul(a16, b16.t())}, 3, 0.0)
            work = 2.0 * probe ** 3
            _SCALED_MM_PROBE.update(rate=work / t["scaled_mm"], bf16=work / t["bf16"], error=None)
        except Exception as e:  # not on this device / build
            _SCALED_MM_PROBE.update(rate=None, bf16=None, error=f"{type(e).__name__}: {str(e)[:80]}")
        if _SCALED_MM_PROBE["rate"] is not None:
            print(f"# torch._scaled_mm probe {probe}^3: {_SCALED_MM_PROBE['rate'] / 1e9:.2f} GFLOP/s, "
                  f"torch BF16 matmul {_SCALED_MM_PROBE['bf16'] / 1e9:.2f} GFLOP/s")
    if _SCALED_MM_PROBE["error"]:
        return f"fails on this CPU: {_SCALED_MM_PROBE['error']}"
    rate, bf16 = _SCALED_MM_PROBE["rate"], _SCALED_MM_PROBE["bf16"]
    if cpu_report.emulated(rate, bf16):
        return (f"emulated on this CPU: {rate / 1e9:.2f} GFLOP/s against BF16 matmul's {bf16 / 1e9:.2f} "
                f"in a {probe}^3 probe")
    if flops / rate > limit_seconds:
        return f"one call would take about {flops / rate:.0f} s at the probe's {rate / 1e9:.2f} GFLOP/s"
    return None


def linear_case(ctx, torch, tokens, features, rounds, min_seconds):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((tokens, features), dtype=np.float32)
    dy = rng.standard_normal((tokens, features), dtype=np.float32) * 0.01
    w = (rng.standard_normal((features, features), dtype=np.float32) / np.sqrt(features)).astype(np.float32)
    cands = {}
    for name, recipe in (("octet_fp8_current", octet.CurrentScaling()), ("octet_fp32", None)):
        layer = octet.Linear(ctx, features, features, recipe=recipe)
        layer.set_parameter("weight", w)
        xt, dyt = ctx.tensor(x), ctx.tensor(dy)

        def step(layer=layer, xt=xt, dyt=dyt):
            _, saved = layer.forward(xt, training=True)
            layer.backward(saved, dyt)
        cands[name] = step
    if torch is not None:
        lin = torch.nn.Linear(features, features)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w))
        # torch's own tensors (64-byte aligned, as torch allocates), not views
        # of the NumPy arrays: what a torch model hands its layers.
        tx = torch.from_numpy(x).clone().requires_grad_(True)
        tdy = torch.from_numpy(dy).clone()

        def fp32():
            lin.zero_grad(set_to_none=True)
            tx.grad = None
            lin(tx).backward(tdy)

        def bf16():
            lin.zero_grad(set_to_none=True)
            tx.grad = None
            with torch.autocast("cpu", dtype=torch.bfloat16):
                y = lin(tx)
            y.backward(tdy.to(y.dtype))
        cands["torch_linear_fp32"] = fp32
        cands["torch_linear_bf16_autocast"] = bf16
        import octet.torch as ot  # the same layers as torch.nn.Modules: what octet.torch adds to them
        for name, recipe in (("octet_torch_fp8_current", octet.CurrentScaling()), ("octet_torch_fp32", None)):
            mod = ot.Linear(features, features, context=ctx, recipe=recipe)
            with torch.no_grad():
                mod.weight.copy_(torch.from_numpy(w))

            def module_step(mod=mod):
                mod.zero_grad(set_to_none=True)
                tx.grad = None
                mod(tx).backward(tdy)
            cands[name] = module_step
        # Each module right after the layer it wraps, so that the pair
        # compared for the octet.torch target runs under the same conditions
        # in every round (the candidate after torch's own runs slower).
        order = ["octet_fp8_current", "octet_torch_fp8_current", "octet_fp32", "octet_torch_fp32",
                 "torch_linear_fp32", "torch_linear_bf16_autocast"]
        cands = {name: cands[name] for name in order}
    return interleaved(cands, rounds, min_seconds)


def quantize_case(ctx, torch, rows, cols, rounds, min_seconds):
    """Per-tensor FP32 -> E4M3 current scaling on rows x cols: Octet's amax
    kernel then octet_quantize (rowwise; and both usages, the fused
    cast+transpose in the Hopper-like profile), against torch eager
    amax + scale + clamp + cast, and a memcpy (numpy) of the FP32 input, all
    interleaved. Returns {name: seconds}."""
    from octet import _core
    rng = np.random.default_rng(3)
    x32 = rng.standard_normal((rows, cols), dtype=np.float32) * 50
    dst = np.empty_like(x32)
    hopper = octet.Context("cpu", profile="hopper-like")
    cands = {"memcpy_fp32_input": lambda: np.copyto(dst, x32)}
    options = _core._lib.QuantizeOptions()
    _core._check(_core._libc.octet_quantize_options_init(_core._c.byref(options)))
    options.saturate = 1
    for name, c, usages in (("octet_rowwise", ctx, octet.ROWWISE), ("octet_cast_transpose", hopper, octet.BOTH)):
        xt = c.tensor(x32)
        q = c.empty(x32.shape, octet.E4M3, usages)

        def run(c=c, xt=xt, q=q):
            amax = c.amax(xt)
            q.set_scale(448.0 / amax)
            _core._check(_core._libc.octet_quantize(c.handle, xt.handle, q.handle, _core._c.byref(options)))
        cands[name] = run
    if torch is not None and hasattr(torch, "float8_e4m3fn"):
        tx = torch.from_numpy(x32)

        def torch_q():
            s = 448.0 / tx.abs().max()
            return (tx * s).clamp(-448, 448).to(torch.float8_e4m3fn)
        cands["torch_eager"] = torch_q

        def torch_qt():
            q = torch_q()
            return q, q.t().contiguous()
        cands["torch_eager_plus_transpose"] = torch_qt
    return interleaved(cands, rounds, min_seconds)


def bandwidths(ctx, torch, rounds):
    """(memcpy GB/s counting bytes read + written, read GB/s): a numpy copy
    of 256 MiB, and the faster of Octet's amax and torch.sum over 256 MiB
    of FP32 (both read every byte once and write nothing of size)."""
    src = np.ones(256 << 20, dtype=np.uint8)
    dst = np.empty_like(src)
    x32 = np.ones(64 << 20, dtype=np.float32)
    xt = ctx.tensor(x32)
    cands = {"memcpy": lambda: np.copyto(dst, src), "octet_amax": lambda: ctx.amax(xt)}
    if torch is not None:
        tx = torch.from_numpy(x32)
        cands["torch_sum"] = lambda: torch.sum(tx)
    t = interleaved(cands, rounds, 0.5)
    read = max(x32.nbytes / t[name] for name in cands if name != "memcpy") / 1e9
    return 2 * src.nbytes / t["memcpy"] / 1e9, read


def cpp_quantize_ratios(bench, repetitions):
    """{"mxfp8" | "1x128" | "128x128" | "cast_transpose": ratio to memcpy}
    from octet_bench_cpu's same-iteration memcpy (median of the
    repetitions); {} when the benchmark binary is absent."""
    if not bench or not os.path.exists(bench):
        print(f"# octet_bench_cpu not found ({bench}): the C++ quantize rows are not measured")
        return {}
    runs = {"mxfp8": f"BM_BlockQuantize/{octet.SCALING_MXFP8_1X32}/",
            "1x128": f"BM_BlockQuantize/{octet.SCALING_BLOCK_1X128}/",
            "128x128": f"BM_BlockQuantize/{octet.SCALING_BLOCK_128X128}/",
            "cast_transpose": "BM_Quantize/3/"}
    pattern = "|".join(f"^{p}" for p in runs.values())
    text = subprocess.run([bench, f"--benchmark_filter={pattern}", f"--benchmark_repetitions={repetitions}",
                           "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
                          check=True, capture_output=True, text=True).stdout
    counters = cpu_report.benchmark_counters(text)
    out = {}
    for key, prefix in runs.items():
        found = [c for name, c in counters.items() if name.startswith(prefix)]
        out[key] = found[0]["ratio_vs_memcpy"] if found else None
    return out


def cpp_peak_rates(bench):
    """(VDPBF16PS per ns, FMA per ns, multiply-add ratio) of one core, from
    octet_bench_cpu's BM_PeakDpbf16VsFma (same iterations); None when the
    benchmark binary is absent or the CPU has no AVX512_BF16."""
    if not bench or not os.path.exists(bench):
        return None
    text = subprocess.run([bench, "--benchmark_filter=^BM_PeakDpbf16VsFma", "--benchmark_repetitions=3",
                           "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
                          check=True, capture_output=True, text=True).stdout
    found = [c for name, c in cpu_report.benchmark_counters(text).items() if name.startswith("BM_PeakDpbf16VsFma")]
    if not found or "mac_ratio" not in found[0]:
        return None
    return found[0]["dpbf16_per_ns"], found[0]["fma_per_ns"], found[0]["mac_ratio"]


def demo_rows(octet_cli, steps, hidden=None):
    """{precision: ms/step} of `octet demo --backend cpu` (at its default
    width, or --hidden `hidden`); {} when the octet command is absent."""
    if not octet_cli or not os.path.exists(octet_cli):
        print(f"# octet command not found ({octet_cli}): the demo rows are not measured")
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        extra = ["--hidden", str(hidden)] if hidden else []
        r = subprocess.run([octet_cli, "demo", "--backend", "cpu", "--steps", str(steps), "--plot",
                            os.path.join(tmp, "loss.svg")] + extra, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"octet demo --backend cpu failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return cpu_report.demo_ms_per_step(r.stdout)


# The demo's target is on its default width; a wider model shows where its
# GEMMs, not the per-step fixed costs, decide the time.
DEMO_WIDE_HIDDEN = 512


def machine_class_here():
    try:
        with open("/proc/cpuinfo") as f:
            return cpu_report.machine_class(cpu_report.cpu_flags(f.read()))
    except OSError:
        return "unknown"


def git_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def build_dir():
    lib = os.environ.get("OCTET_LIBRARY")
    if lib:
        return os.path.dirname(os.path.dirname(os.path.abspath(lib)))
    return os.path.join(ROOT, "build")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer rounds, no Linear, no demo, no C++ rows")
    p.add_argument("--no-install", action="store_true", help="run without torch when it is missing")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--quantize-only", action="store_true",
                   help="only the per-tensor quantize vs memcpy vs torch section")
    p.add_argument("--bench-cpu", default=None, help="octet_bench_cpu (default: bin/ of the library's build)")
    p.add_argument("--octet", default=None, help="the octet command (default: bin/ of the library's build)")
    p.add_argument("--demo-steps", type=int, default=100)
    p.add_argument("--write-docs", action="store_true",
                   help="write this machine class's section of docs/benchmarks.md and its plot in docs/img/")
    args = p.parse_args()
    rounds = args.rounds or (3 if args.quick else 7)
    torch = load_torch(not args.no_install)
    dnnl = load_dnnl()
    ctx = octet.Context("cpu")
    threads = torch.get_num_threads() if torch is not None else os.cpu_count()
    load_start = os.getloadavg()
    header = [f"octet cpu device: {ctx.info().get('device', '?') if isinstance(ctx.info(), dict) else ctx.info()}",
              f"torch {torch.__version__ if torch else 'absent'}, threads {threads}, "
              f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, os.cpu_count {os.cpu_count()}"]
    cls = machine_class_here()
    header.insert(0, f"machine class: {cpu_report.MACHINE_CLASS_NAMES.get(cls, cls)} (from /proc/cpuinfo)")
    for line in header:
        print(f"# {line}")
    rows, cols = 4096, 4096
    t = quantize_case(ctx, torch, rows, cols, rounds, 1.0)
    quantize_table = [f"| quantize FP32 {rows}x{cols} -> E4M3 (amax + scale + cast) | ms | time vs memcpy of the input |",
                      "|---|---|---|"]
    for name, sec in t.items():
        quantize_table.append(f"| {name} | {sec * 1e3:.2f} | {sec / t['memcpy_fp32_input']:.2f}x |")
    print("\n".join(quantize_table) + "\n")
    if args.quantize_only:
        return
    copy_bw, read_bw = bandwidths(ctx, torch, rounds)
    header.append(f"memcpy 256 MiB: {copy_bw:.1f} GB/s (read + written); read bandwidth: {read_bw:.1f} GB/s "
                  "(the faster of Octet amax and torch.sum over 256 MiB FP32)")
    print(f"# {header[-1]}")
    peak = cpp_peak_rates(args.bench_cpu or os.path.join(build_dir(), "bin", "octet_bench_cpu"))
    if peak:
        header.append(f"one core's peak: {peak[0]:.2f} VDPBF16PS/ns, {peak[1]:.2f} FP32 FMA/ns (512-bit): "
                      f"{peak[2]:.2f}x the multiply-adds on VDPBF16PS (FP8 GEMMs) as on FMA (sgemm)")
        print(f"# {header[-1]}")
    results = []
    shapes = cpu_report.GEMM_SHAPES if not args.quick else cpu_report.GEMM_SHAPES[:3]
    m1_weights = None
    for m, n, k in shapes:
        t = gemm_case(ctx, torch, dnnl, m, n, k, rounds, 1.0)
        notes = {}
        if m <= 32:
            gbps = n * k / t["octet_fp8"] / 1e9
            notes["octet_fp8"] = f"weights {gbps:.1f} GB/s"
            if m == 1:
                m1_weights = gbps
        results += cpu_report.rows_from_times(cpu_report.gemm_work(m, n, k), cpu_report.OURS_GEMM, t,
                                              2.0 * m * n * k, notes)
    quant, demo, demo_wide = {}, {}, {}
    if not args.quick:
        t = linear_case(ctx, torch, 4096, 4096, rounds, 0.0)
        results += cpu_report.rows_from_times(cpu_report.LINEAR_WORK, cpu_report.OURS_LINEAR, t,
                                              3 * 2.0 * 4096 ** 3)
        bin_dir = os.path.join(build_dir(), "bin")
        quant = cpp_quantize_ratios(args.bench_cpu or os.path.join(bin_dir, "octet_bench_cpu"), 3)
        octet_cli = args.octet or os.path.join(bin_dir, "octet")
        demo = demo_rows(octet_cli, args.demo_steps)
        demo_wide = demo_rows(octet_cli, max(10, args.demo_steps // 5), DEMO_WIDE_HIDDEN)
    load_end = os.getloadavg()
    header.append(f"load average (1 min) {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end")
    gemm_table = cpu_report.render_rows(results)
    targets = cpu_report.issue_targets(results, read_bw, m1_weights, quant, demo)
    target_table = cpu_report.render_targets(targets)
    demo_table = "\n".join([f"| octet demo --backend cpu: ms/step (median) | default width (64) | --hidden "
                             f"{DEMO_WIDE_HIDDEN} |", "|---|---|---|"] +
                            [f"| {name} | {ms:.1f} | {demo_wide.get(name, float('nan')):.1f} |"
                             for name, ms in demo.items()]) if demo else \
        "`octet demo --backend cpu`: not run (--quick, or no octet command)."
    print(gemm_table + "\n\n" + demo_table + "\n\n" + target_table)
    if args.write_docs:
        if cls not in cpu_report.MACHINE_CLASSES:
            raise SystemExit(f"--write-docs: this CPU's class ({cls}) has no section in docs/benchmarks.md")
        groups, series, values = cpu_report.plot_data(results)
        svg = svg_bars.grouped_bars_svg(groups, series, values,
                                        f"Octet cpu FP8 vs torch and oneDNN, {cls}, one process (higher is better)",
                                        "GFLOP/s")
        plot = cpu_report.plot_file(cls)
        os.makedirs(os.path.join(ROOT, "docs", "img"), exist_ok=True)
        with open(os.path.join(ROOT, "docs", plot), "w") as f:
            f.write(svg)
        section = "\n".join([
            f"Written by `tests/bench/cpu/bench_cpu_vs_torch.py --write-docs` on "
            f"{datetime.date.today().isoformat()} at commit {git_commit()}"
            f"{' (--quick)' if args.quick else ''}, median of {rounds} interleaved rounds.",
            "", "    " + "\n    ".join(header), "",
            "Issue 14's targets, each a ratio from this run:", "", target_table, "",
            f"![GFLOP/s by shape for each candidate, {cls}]({plot})", "",
            gemm_table, "", demo_table, "", "\n".join(quantize_table)])
        path = os.path.join(ROOT, "docs", "benchmarks.md")
        with open(path) as f:
            doc = f.read()
        with open(path, "w") as f:
            f.write(cpu_report.replace_class_section(doc, cls, section))
        print(f"# wrote {path} ({cls} section) and docs/{plot}")

if __name__ == "__main__":
    main()
