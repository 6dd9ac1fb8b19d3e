#!/usr/bin/env python3
"""Runs `mpiexec -n N octet demo --distributed` as a user does and checks it.

usage: check_distributed_demo.py MODE RANKS OCTET -- MPIEXEC [FLAGS ...] NUMPROC_FLAG

MODE train: fp32, bf16, fp8-delayed and fp8-current on RANKS ranks
(batch 64 / RANKS per rank, hidden 32, 20 steps). Checked:
  - exit status 0 and the PASS line; the line saying every rank's loss was
    compared at every step;
  - the bytes each rank sent per step, against counts made here from the
    model's shapes: all-gather = the weight matrices' elements / RANKS x 4
    (FP32), 2 (BF16) or 1 (FP8) bytes; reduce-scatter = all of the weight
    gradient (FP32, or BF16 for the bf16 run); all-reduce = the vectors'
    gradients (norm weights and biases);
  - the FP32 run's loss at every step against a single process's
    (`octet demo --precisions fp32 --batch 64`, the concatenated batches)
    within the tolerance below, sharded and with --sharding none (plain
    data parallelism: no gathers, every gradient all-reduced).

The tolerance. The single process and the ranks see the same parameters,
data and per-row forward (the reference computes each output row alone), so
at step 1 only the loss's mean in double differs: 1e-12 relative. What
differs afterwards is the order of each weight gradient's sum over the
K = 64 rows of the global batch (each rank sums its rows, the reduce-scatter
adds the ranks' partial sums): two orders of an FP32 sum of K terms differ
by at most 2 gamma_K times the sum of the terms' magnitudes, gamma_K =
K u / (1 - K u), u = 2^-24. Adam turns each gradient into a normalised
update, so a relative gradient difference d moves each update by about d
of itself; the differences of the s - 1 updates before step s add up. The
loss at step s must agree within 2 gamma_K s relative (1.5e-4 at step 20);
a bf16 run misses it by far.

MODE hang: rank 1 stops taking part at step 3 (--inject-failure 1:3) with
--timeout 2: the exit status is not 0, every other rank prints an error
naming the collective (allgather, MPI_Iallgather) and the 2 s timeout, and
rank 1 its injected failure; all within 90 s (no hang).

MODE exit: rank 1 exits at step 3 (--inject-failure 1:3:exit): the exit
status is not 0 and mpiexec ends the job within 60 s.
"""
import os
import re
import subprocess
import sys
import tempfile

HIDDEN = 32
GLOBAL_BATCH = 64
STEPS = 20
OUT = 8
U = 2.0**-24


def fail(message):
    print("check_distributed_demo: FAIL: " + message)
    sys.exit(1)


def run(cmd, timeout, cwd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        fail("%s did not end within %d s (a hang)" % (" ".join(cmd), timeout))


def read_losses(path):
    runs = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            name, step, loss = line.split()
            runs.setdefault(name, []).append((int(step), float(loss)))
    return runs


def expected_bytes(ranks):
    h, ffn = HIDDEN, 2 * HIDDEN
    matrices = 2 * (ffn * h + h * ffn) + OUT * h  # fc1, fc2 per block; the head
    vectors = 2 * (h + h + ffn + h) + OUT  # norm weight and bias, fc1 and fc2 biases; head bias
    assert matrices % ranks == 0
    return matrices, vectors


def check_train(ranks, octet, mpiexec, workdir):
    batch = GLOBAL_BATCH // ranks
    common = ["--steps", str(STEPS), "--hidden", str(HIDDEN)]
    single = run([octet, "demo", "--precisions", "fp32", "--batch", str(GLOBAL_BATCH), "--losses", "single.txt",
                  "--plot", "single.svg"] + common, 300, workdir)
    if single.returncode != 0:
        fail("the single-process run failed:\n" + single.stdout + single.stderr)
    cmd = mpiexec + [str(ranks), octet, "demo", "--distributed", "--batch", str(batch), "--losses", "dist.txt",
                     "--plot", "dist.svg", "--timeout", "60"] + common
    dist = run(cmd, 300, workdir)
    out = dist.stdout
    print(out)
    if dist.returncode != 0 or "PASS" not in out:
        fail("the distributed run failed (status %d):\n%s" % (dist.returncode, dist.stderr))
    if "losses: equal on all %d ranks at every step" % ranks not in out:
        fail("no line saying every rank's loss was compared")

    matrices, vectors = expected_bytes(ranks)
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^(fp32|bf16|fp8-delayed|fp8-current)\s+([\d.]+)\s+(\S+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$",
                     line)
        if m:
            rows[m.group(1)] = [int(m.group(i)) for i in range(5, 9)]
    if sorted(rows) != sorted(["fp32", "bf16", "fp8-delayed", "fp8-current"]):
        fail("table rows: %s" % sorted(rows))
    for name, (gather, _scale, reduce_scatter, allreduce) in rows.items():
        value = 1 if name.startswith("fp8") else 2 if name == "bf16" else 4  # bytes gathered per element
        grad = 2 if name == "bf16" else 4  # gradients in the parameter dtype
        want = (matrices // ranks * value, matrices * grad, vectors * grad)
        if (gather, reduce_scatter, allreduce) != want:
            fail("%s: bytes per step (all-gather, reduce-scatter, all-reduce) = %s, expected %s" %
                 (name, (gather, reduce_scatter, allreduce), want))
    if rows["fp8-current"][0] * 4 != rows["fp32"][0] or rows["bf16"][0] * 2 != rows["fp32"][0]:
        fail("the gathers are not FP32 = 2 BF16 = 4 FP8")
    if not re.search(r"FP32 %d B \(fp32\); BF16 %d B \(bf16\) = 0\.50 x FP32; FP8 %d B \(fp8-delayed\) = 0\.25 x FP32"
                     % (matrices // ranks * 4, matrices // ranks * 2, matrices // ranks), out):
        fail("the bytes line does not state FP32, BF16 and FP8 gathers")

    s_losses = read_losses(os.path.join(workdir, "single.txt"))["fp32"]
    d_runs = read_losses(os.path.join(workdir, "dist.txt"))
    for name in rows:
        if len(d_runs.get(name, [])) != STEPS:
            fail("%s: %d losses written, expected %d" % (name, len(d_runs.get(name, [])), STEPS))
    gamma = GLOBAL_BATCH * U / (1 - GLOBAL_BATCH * U)
    worst = 0.0
    for (step, single_loss), (step_d, dist_loss) in zip(s_losses, d_runs["fp32"]):
        assert step == step_d
        tol = 1e-12 if step == 1 else 2 * gamma * step
        rel = abs(dist_loss - single_loss) / abs(single_loss)
        worst = max(worst, rel / tol)
        if rel > tol:
            fail("fp32 step %d: loss %.17g on %d ranks, %.17g in one process: relative difference %.3g > %.3g" %
                 (step, dist_loss, ranks, single_loss, rel, tol))
    # Plain data parallelism (--sharding none): no gathers, every gradient
    # all-reduced, the same FP32 losses within the same tolerance (the
    # all-reduce sums the ranks' partial sums as the reduce-scatter does).
    dp = run(mpiexec + [str(ranks), octet, "demo", "--distributed", "--sharding", "none", "--precisions", "fp32",
                        "--batch", str(batch), "--losses", "dp.txt", "--plot", "dp.svg"] + common, 300, workdir)
    if dp.returncode != 0 or "no weight all-gathers" not in dp.stdout:
        fail("the --sharding none run failed (status %d):\n%s%s" % (dp.returncode, dp.stdout, dp.stderr))
    m = re.search(r"^fp32\s+[\d.]+\s+\S+\s+[\d.]+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", dp.stdout, re.M)
    if not m or [int(m.group(i)) for i in (1, 3, 4)] != [0, 0, (matrices + vectors) * 4]:
        fail("--sharding none: bytes per step %s, expected no gathers or reduce-scatters and an all-reduce of %d" %
             (m.groups() if m else None, (matrices + vectors) * 4))
    for (step, single_loss), (_, dp_loss) in zip(s_losses, read_losses(os.path.join(workdir, "dp.txt"))["fp32"]):
        tol = 1e-12 if step == 1 else 2 * gamma * step
        if abs(dp_loss - single_loss) / abs(single_loss) > tol:
            fail("--sharding none, step %d: loss %.17g, one process %.17g" % (step, dp_loss, single_loss))
    # The bf16 run is not FP32's: the check above would tell them apart.
    bf16_rel = max(abs(a[1] - b[1]) / abs(b[1]) for a, b in zip(d_runs["bf16"], s_losses))
    if bf16_rel <= 2 * gamma * STEPS:
        fail("bf16's losses are within the FP32 tolerance of FP32's (%.3g): the comparison cannot tell" % bf16_rel)
    print("check_distributed_demo: fp32 on %d ranks = one process within the tolerance (worst %.3g of it)" %
          (ranks, worst))


def check_failure(mode, ranks, octet, mpiexec, workdir):
    spec = "1:3" if mode == "hang" else "1:3:exit"
    cmd = mpiexec + [str(ranks), octet, "demo", "--distributed", "--precisions", "fp32", "--steps", "10", "--batch",
                     "8", "--hidden", str(HIDDEN), "--timeout", "2", "--inject-failure", spec, "--plot", "f.svg"]
    res = run(cmd, 90 if mode == "hang" else 60, workdir)
    err = res.stderr + res.stdout
    print(err)
    if res.returncode == 0:
        fail("a rank failed but the job's exit status is 0")
    if mode == "exit":
        if "rank 1: fp32: step 3: injected failure: exiting" not in err:
            fail("rank 1 did not report its exit")
        return
    if not re.search(r"rank 1: fp32: error: step 3: injected failure", err):
        fail("rank 1 did not report its injected failure")
    for r in range(ranks):
        if r == 1:
            continue
        m = re.search(r"rank %d: fp32: error: (.*)" % r, err)
        if not m:
            fail("rank %d reported no error" % r)
        if "allgather (MPI_Iallgather" not in m.group(1) or "did not complete within the timeout of 2 s" not in m.group(1):
            fail("rank %d's error does not name the collective and the timeout: %s" % (r, m.group(1)))


def main():
    mode, ranks, octet = sys.argv[1], int(sys.argv[2]), os.path.abspath(sys.argv[3])
    if sys.argv[4] != "--":
        fail("usage: check_distributed_demo.py MODE RANKS OCTET -- MPIEXEC [FLAGS ...] NUMPROC_FLAG")
    mpiexec = sys.argv[5:]
    workdir = tempfile.mkdtemp(prefix="octet-distributed-demo-")
    if mode == "train":
        check_train(ranks, octet, mpiexec, workdir)
    elif mode in ("hang", "exit"):
        check_failure(mode, ranks, octet, mpiexec, workdir)
    else:
        fail("unknown mode " + mode)
    print("check_distributed_demo: %s on %d ranks: PASS" % (mode, ranks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
