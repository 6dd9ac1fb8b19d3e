"""What the Python path costs over Octet's kernels (issue 43, item 5).

    OCTET_LIBRARY=build/lib/liboctet.so PYTHONPATH=api/python \\
        python3 tests/bench/cpu/bench_python_path.py [--rounds 9]

For a 4096 x 4096 FP32 input (GEMMs 2048^3), interleaved round by round,
medians:

1. on every host backend that declares the statistics kernel: a per-tensor
   quantize with statistics (octet_quantize_with_stats) over the same
   quantize without them (octet_quantize), both into one preallocated
   output (target <= 1.3x);
2. on the cpu backend, each Python call a user makes first over the C
   calls it stands for, made through ctypes on preallocated tensors (the
   kernels alone): ctx.quantize(x) (current scaling and its saturation
   check) over octet_amax + octet_quantize; ctx.dequantize(q) over
   octet_dequantize; ctx.gemm(a, b) over octet_gemm (targets <= 1.3x).

Prints one markdown table (docs/benchmarks.md, "Python path") and the
machine class line.
"""

import argparse
import ctypes as c
import sys

import numpy as np

import octet
from octet import _lib
from octet._lib import lib

sys.path.insert(0, __import__("os").path.dirname(__file__))
import cpu_report  # noqa: E402

_STATS_FEATURE = 1 << 8


def check(status):
    if status != 0:
        raise RuntimeError(f"octet call failed ({status}): {lib.octet_last_error_message().decode()}")


def quantize_options():
    o = _lib.QuantizeOptions()
    check(lib.octet_quantize_options_init_sized(c.byref(o), c.sizeof(o)))
    return o


def stats_ratio(backend, x, rounds):
    ctx = octet.Context(backend)
    xt = ctx.tensor(x)
    q = ctx.empty(x.shape, octet.E4M3, octet.ROWWISE)
    q.set_scale(64.0)
    o = quantize_options()
    st = _lib.QuantizeStats(struct_size=c.sizeof(_lib.QuantizeStats))
    t = cpu_report.interleaved({
        "quantize": lambda: check(lib.octet_quantize(ctx.handle, xt.handle, q.handle, c.byref(o))),
        "quantize_with_stats": lambda: check(lib.octet_quantize_with_stats(ctx.handle, xt.handle, q.handle,
                                                                           c.byref(o), c.byref(st))),
    }, rounds)
    return t["quantize"], t["quantize_with_stats"]


def python_ratios(x, rounds):
    ctx = octet.Context("cpu")
    xt = ctx.tensor(x)
    out = {}
    # ctx.quantize(x): current scaling with the saturation check, over amax + quantize.
    q = ctx.empty(x.shape, octet.E4M3, octet.BOTH)
    amax = c.c_float()
    o = quantize_options()

    def kernels():
        check(lib.octet_amax(ctx.handle, xt.handle, c.byref(amax)))
        q.set_scale(448.0 / amax.value)
        check(lib.octet_quantize(ctx.handle, xt.handle, q.handle, c.byref(o)))
    t = cpu_report.interleaved({"ctx.quantize(x)": lambda: ctx.quantize(xt), "octet_amax + octet_quantize": kernels}, rounds)
    out["quantize"] = (t["octet_amax + octet_quantize"], t["ctx.quantize(x)"])
    # ctx.dequantize(q) over octet_dequantize into a preallocated output.
    qq = ctx.quantize(xt)
    d = ctx.empty(x.shape, octet.FP32)
    t = cpu_report.interleaved({"ctx.dequantize(q)": lambda: ctx.dequantize(qq),
                     "octet_dequantize": lambda: check(lib.octet_dequantize(ctx.handle, qq.handle, d.handle))}, rounds)
    out["dequantize"] = (t["octet_dequantize"], t["ctx.dequantize(q)"])
    # ctx.gemm(a, b) over octet_gemm, 2048^3 E4M3.
    g = np.random.default_rng(3).standard_normal((2048, 2048), dtype=np.float32)
    a, b = ctx.quantize(g), ctx.quantize(g.T.copy())
    dd = ctx.empty((2048, 2048), octet.FP32)
    go = _lib.GemmOptions()
    check(lib.octet_gemm_options_init_sized(c.byref(go), c.sizeof(go)))
    t = cpu_report.interleaved({"ctx.gemm(a, b)": lambda: ctx.gemm(a, b),
                     "octet_gemm": lambda: check(lib.octet_gemm(ctx.handle, a.handle, b.handle, dd.handle,
                                                                c.byref(go)))}, rounds)
    out["gemm 2048^3"] = (t["octet_gemm"], t["ctx.gemm(a, b)"])
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=9)
    args = p.parse_args()
    with open("/proc/cpuinfo") as f:
        cls = cpu_report.machine_class(cpu_report.cpu_flags(f.read()))
    print(f"# machine class: {cpu_report.MACHINE_CLASS_NAMES.get(cls, cls)} (from /proc/cpuinfo)")
    x = np.random.default_rng(1).standard_normal((4096, 4096), dtype=np.float32)
    rows = ["| work (4096 x 4096 FP32 -> E4M3) | baseline | ms | measured | ms | ratio | target <= 1.3x |",
            "|---|---|---|---|---|---|---|"]
    for b in octet.backends():
        if b["available"] and b["memory"] == "host" and b["features"] & _STATS_FEATURE:
            base, got = stats_ratio(b["name"], x, rounds=args.rounds if b["name"] != "reference" else 3)
            rows.append(f"| {b['name']}: quantize with statistics | octet_quantize | {base * 1e3:.2f} | "
                        f"octet_quantize_with_stats | {got * 1e3:.2f} | {got / base:.2f}x | "
                        f"{'yes' if got / base <= 1.3 else '**no**'} |")
    names = {"quantize": ("octet_amax + octet_quantize", "ctx.quantize(x)"),
             "dequantize": ("octet_dequantize", "ctx.dequantize(q)"), "gemm 2048^3": ("octet_gemm", "ctx.gemm(a, b)")}
    for work, (base, got) in python_ratios(x, args.rounds).items():
        b, m = names[work]
        rows.append(f"| cpu: {work} from Python | {b} | {base * 1e3:.2f} | {m} | {got * 1e3:.2f} | "
                    f"{got / base:.2f}x | {'yes' if got / base <= 1.3 else '**no**'} |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
