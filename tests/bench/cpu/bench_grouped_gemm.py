"""Grouped GEMMs on the cpu backend (issue 44, item 5; docs/grouped_gemm.md).

    OCTET_LIBRARY=build/lib/liboctet.so PYTHONPATH=api/python \\
        python3 tests/bench/cpu/bench_grouped_gemm.py [--rounds 5] [--experts 8 64]

A mixture-of-experts up-projection of DeepSeek's shape: 4096 tokens routed
top-2 (8192 rows) by a seeded random router over E experts (so the splits
are ragged), hidden 2048, expert width 1408: for each expert g,
Y_g = X_g W_g^T. Candidates, interleaved round by round, medians:

- octet grouped: one ctx.grouped_gemm of the stacked E4M3 input (per-tensor
  scale) with the E experts' E4M3 weights;
- octet loop: the same GEMMs as E ctx.gemm calls, each on the group's own
  E4M3 input (what a user writes without the grouped call);
- torch bf16 loop: E torch.matmul calls on BF16 slices, torch's threads as
  many as Octet's;
- torch fp32 loop: the same in FP32 (what a user picks where the CPU has no
  BF16 arithmetic);
- torch grouped: torch._grouped_mm on BF16, where torch runs it on the CPU
  (else the row says why not).

Ratios are the baseline's time over octet grouped's (above 1: Octet is
faster). Prints one markdown table per expert count and the machine class
(from /proc/cpuinfo). --quick: a tiny shape, one round (the test that keeps
the script running; its figures mean nothing).
"""

import argparse
import os
import sys

import numpy as np

import octet

sys.path.insert(0, os.path.dirname(__file__))
import cpu_report  # noqa: E402


def route(tokens, experts, top_k, rng):
    """Rows per expert of a top-k softmax router over random logits."""
    logits = rng.standard_normal((tokens, experts))
    chosen = np.argsort(-logits, axis=1)[:, :top_k]
    return [int(c) for c in np.bincount(chosen.ravel(), minlength=experts)]


def torch_candidates(x, weights, splits, threads):
    try:
        import torch
    except ImportError:
        return {}, "torch is not installed"
    torch.set_num_threads(threads)
    xb = torch.from_numpy(x).to(torch.bfloat16)
    wb = [torch.from_numpy(w).to(torch.bfloat16) for w in weights]
    offs = np.cumsum([0] + splits)
    slices = [xb[offs[g]:offs[g + 1]] for g in range(len(splits))]
    out = {}

    def loop():
        for s, w in zip(slices, wb):
            torch.matmul(s, w.t())

    out["torch bf16 loop"] = loop
    xf = torch.from_numpy(x)
    wf = [torch.from_numpy(w) for w in weights]
    slices_f = [xf[offs[g]:offs[g + 1]] for g in range(len(splits))]

    def loop_fp32():
        for s, w in zip(slices_f, wf):
            torch.matmul(s, w.t())

    out["torch fp32 loop"] = loop_fp32
    why = ""
    grouped = getattr(torch, "_grouped_mm", None)
    if grouped is None:
        why = f"torch {torch.__version__} has no torch._grouped_mm"
    else:
        w_stack = torch.stack(wb).transpose(-2, -1)
        ends = torch.tensor(offs[1:], dtype=torch.int32)
        try:
            grouped(xb, w_stack, offs=ends)
            out["torch grouped"] = lambda: grouped(xb, w_stack, offs=ends)
        except Exception as e:  # noqa: BLE001 (torch raises several types for "not on this device")
            why = f"torch._grouped_mm on the CPU: {type(e).__name__}: {str(e).splitlines()[0][:90]}"
    return out, why


def run(experts, tokens, hidden, width, rounds, ctx):
    rng = np.random.default_rng(experts)
    splits = route(tokens, experts, 2, rng)
    rows = sum(splits)
    x = rng.standard_normal((rows, hidden)).astype(np.float32)
    weights = [(rng.standard_normal((width, hidden)) * 0.02).astype(np.float32) for _ in range(experts)]
    qx = ctx.quantize(x, octet.E4M3, scale=64.0, usages=octet.ROWWISE)
    qw = [ctx.quantize(w, octet.E4M3, usages=octet.ROWWISE) for w in weights]
    offs = np.cumsum([0] + splits)
    own = [ctx.quantize(x[offs[g]:offs[g + 1]], octet.E4M3, scale=64.0, usages=octet.ROWWISE) if splits[g] else None
           for g in range(experts)]
    y = ctx.empty((rows, width), octet.FP32)
    outs = [ctx.empty((splits[g], width), octet.FP32) if splits[g] else None for g in range(experts)]

    def grouped():
        ctx.grouped_gemm(qx, qw, splits, out=y)

    def loop():
        for g in range(experts):
            if splits[g]:
                ctx.gemm(own[g], qw[g], out=outs[g])

    # The two Octet candidates agree bit for bit (the contract), checked once.
    grouped()
    loop()
    got = y.numpy()
    for g in range(experts):
        if splits[g]:
            assert np.array_equal(got[offs[g]:offs[g + 1]], outs[g].numpy()), f"expert {g} differs"
    cands = {"octet grouped": grouped, "octet loop": loop}
    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))
    extra, why = torch_candidates(x, weights, splits, threads)
    cands.update(extra)
    times = cpu_report.interleaved(cands, rounds)
    flops = 2.0 * rows * hidden * width
    base = times["octet grouped"]
    lines = [f"### {experts} experts: {tokens} tokens top-2 ({rows} rows, splits {min(splits)}..{max(splits)}), "
             f"hidden {hidden}, expert width {width}",
             "",
             "| candidate | ms | GFLOP/s | octet grouped's speed over it |",
             "|---|---|---|---|"]
    for name, t in times.items():
        ratio = "1 (baseline)" if name == "octet grouped" else f"{t / base:.2f}x"
        lines.append(f"| {name} | {t * 1e3:.1f} | {flops / t / 1e9:.1f} | {ratio} |")
    if "torch grouped" not in times:
        lines.append(f"| torch grouped | - | - | not run: {why} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--experts", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    with open("/proc/cpuinfo") as f:
        cls = cpu_report.machine_class(cpu_report.cpu_flags(f.read()))
    ctx = octet.Context("cpu")
    print(f"# machine class: {cpu_report.MACHINE_CLASS_NAMES.get(cls, cls)} (from /proc/cpuinfo); "
          f"octet cpu device: {ctx.info()['device']}; load average {os.getloadavg()[0]:.2f}")
    shape = (64, 32, 24) if args.quick else (4096, 2048, 1408)
    rounds = 1 if args.quick else args.rounds
    for experts in args.experts:
        print()
        print(run(experts, *shape, rounds, ctx))
    print(f"\n# load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
