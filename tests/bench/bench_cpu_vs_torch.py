#!/usr/bin/env python3
"""Octet's cpu backend against the peers a CPU user would otherwise pick, in
one process and one run (docs/benchmarks.md; performance.md's rules).

    OCTET_LIBRARY=build/lib/liboctet.so PYTHONPATH=api/python \\
        python3 tests/bench/bench_cpu_vs_torch.py [--quick] [--quantize-only]

First, per-tensor FP32 -> E4M3 quantize of 4096 x 4096 with current
scaling (amax, scale = 448 / amax, cast): Octet rowwise and Octet's fused
cast+transpose (Hopper-like profile, both copies) against torch eager
(x * s).clamp(-448, 448).to(torch.float8_e4m3fn) (and the same plus a
transposed copy), each as a time relative to a numpy memcpy of the FP32
input in the same rounds. --quantize-only stops there.

For each GEMM shape (E4M3 x E4M3 -> FP32 on Octet's cpu backend, scales
applied) it times, interleaved round by round (each candidate once per
round, the median over rounds reported): Octet FP8, torch FP32 matmul,
torch BF16 matmul, torch._scaled_mm (E4M3, FP32 out; if this torch runs
it on the CPU), and oneDNN's dnnl_sgemm on FP32 operands called through
ctypes (the library the cpu backend links). Then Linear 4096 x 4096 ->
4096 forward + backward: Octet FP8 (current scaling), Octet FP32, torch
nn.Linear FP32 and under BF16 autocast. And a memcpy of 256 MiB (numpy)
for the bandwidth the decode shapes are compared with.

Ratios are FP8 time over the peer's, computed from the same rounds. torch is
installed from PyPI (pip install --user torch) when it is missing and
--install is given; without torch only the Octet and oneDNN columns run.
"""
import argparse
import ctypes
import ctypes.util
import os
import statistics
import subprocess
import sys
import time

import numpy as np

try:
    import octet
except ImportError:  # run from the source tree
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "api", "python"))
    import octet


def load_torch(install):
    try:
        import torch
        return torch
    except ImportError:
        if not install:
            return None
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--user", "torch"])
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
    qa = ctx.quantize(a32, octet.E4M3, scale=100.0, usages=octet.ROWWISE)
    qb = ctx.quantize(b32, octet.E4M3, scale=100.0, usages=octet.ROWWISE)
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
        try:
            fa = (ta * 100).to(torch.float8_e4m3fn)
            fb = (tb * 100).to(torch.float8_e4m3fn)
            s = torch.tensor(0.01)
            torch._scaled_mm(fa, fb.t(), scale_a=s, scale_b=s, out_dtype=torch.float32)
            cands["torch_scaled_mm"] = lambda: torch._scaled_mm(fa, fb.t(), scale_a=s, scale_b=s,
                                                                 out_dtype=torch.float32)
        except Exception as e:  # not on this device / build
            print(f"# torch._scaled_mm on CPU: not run ({type(e).__name__}: {str(e)[:80]})")
    t = interleaved(cands, rounds, min_seconds)
    flops = 2.0 * m * n * k
    return {name: (sec, flops / sec / 1e9) for name, sec in t.items()}


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
        tx = torch.from_numpy(x).requires_grad_(True)
        tdy = torch.from_numpy(dy)

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
    t = interleaved(cands, rounds, min_seconds)
    flops = 3 * 2.0 * tokens * features * features
    return {name: (sec, flops / sec / 1e9) for name, sec in t.items()}


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


def memcpy_bandwidth(rounds):
    src = np.ones(256 << 20, dtype=np.uint8)
    dst = np.empty_like(src)
    t = interleaved({"memcpy": lambda: np.copyto(dst, src)}, rounds, 0.5)["memcpy"]
    return 2 * src.nbytes / t / 1e9  # bytes read + written


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer rounds, no Linear")
    p.add_argument("--install", action="store_true", help="pip install torch when missing")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--quantize-only", action="store_true",
                   help="only the per-tensor quantize vs memcpy vs torch section")
    args = p.parse_args()
    rounds = args.rounds or (3 if args.quick else 7)
    torch = load_torch(args.install)
    dnnl = load_dnnl()
    ctx = octet.Context("cpu")
    threads = torch.get_num_threads() if torch is not None else os.cpu_count()
    print(f"# octet cpu device: {ctx.info().get('device', '?') if isinstance(ctx.info(), dict) else ctx.info()}")
    print(f"# torch {torch.__version__ if torch else 'absent'}, threads {threads}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, os.cpu_count {os.cpu_count()}")
    bw = memcpy_bandwidth(rounds)
    print(f"# memcpy 256 MiB: {bw:.1f} GB/s (read + written)")
    print()
    rows, cols = 4096, 4096
    t = quantize_case(ctx, torch, rows, cols, rounds, 1.0)
    print(f"| quantize FP32 {rows}x{cols} -> E4M3 (amax + scale + cast) | candidate | ms | time vs memcpy of the input |")
    print("|---|---|---|---|")
    for name, sec in t.items():
        print(f"| | {name} | {sec * 1e3:.2f} | {sec / t['memcpy_fp32_input']:.2f}x |")
    print()
    if args.quantize_only:
        return
    print("| work | candidate | ms | GFLOP/s | Octet FP8 speed-up over it |")
    print("|---|---|---|---|---|")
    shapes = [(2048, 2048, 2048), (1, 8192, 8192), (16, 8192, 8192)]
    if not args.quick:
        shapes.append((32, 8192, 8192))
    for m, n, k in shapes:
        r = gemm_case(ctx, torch, dnnl, m, n, k, rounds, 1.0)
        ours = r["octet_fp8"][0]
        for name, (sec, gf) in r.items():
            extra = ""
            if name == "octet_fp8" and m <= 32:
                extra = f" (weights {n * k / sec / 1e9:.1f} GB/s)"
            print(f"| GEMM {m}x{n}x{k} | {name}{extra} | {sec * 1e3:.2f} | {gf:.1f} | {sec / ours:.2f}x |")
    if not args.quick:
        r = linear_case(ctx, torch, 4096, 4096, max(3, rounds // 2), 0.0)
        ours = r["octet_fp8_current"][0]
        for name, (sec, gf) in r.items():
            print(f"| Linear 4096^3 fwd+bwd | {name} | {sec * 1e3:.1f} | {gf:.1f} | {sec / ours:.2f}x |")


if __name__ == "__main__":
    main()
