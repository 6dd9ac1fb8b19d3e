#!/usr/bin/env python3
"""torch BF16 matmul on one thread, timed in thread CPU time: the peer of
tests/bench/bench_gemm_cpu_time.cpp (run with OMP_NUM_THREADS=1) on a shared,
loaded machine, where wall-clock ratios swing with the other processes.
Shapes as the issue's targets; B is [n, k] and multiplied transposed.

    python3 tests/bench/bench_torch_cpu_time.py
"""
import time

import torch


def main():
    torch.set_num_threads(1)
    for m, n, k in [(2048, 2048, 2048), (16, 8192, 8192), (32, 8192, 8192)]:
        x = torch.randn(m, k).to(torch.bfloat16)
        w = torch.randn(n, k).to(torch.bfloat16)
        torch.matmul(x, w.t())  # warm up
        times = []
        for _ in range(5 if m > 32 else 10):
            t0 = time.thread_time()
            torch.matmul(x, w.t())
            times.append(time.thread_time() - t0)
        times.sort()
        print(f"torch_bf16 {m}x{n}x{k} min_cpu_ms={times[0] * 1e3:.2f} "
              f"median_cpu_ms={times[len(times) // 2] * 1e3:.2f} "
              f"GFLOP/s_cpu={2 * m * n * k / times[0] / 1e9:.1f}")


if __name__ == "__main__":
    main()
