"""The error bounds the layer tests share: numerics.md section 8's GEMM
bound, and the check that a result lies within a bound."""

import numpy as np

from _oracle import EPS32


def f64(a):
    return np.asarray(a, dtype=np.float64)


def assert_within(got, want, bound, what):
    err = np.abs(f64(got) - want)
    assert np.all(err <= bound), f"{what}: worst error / bound = {np.max(err / np.maximum(bound, 1e-300)):.3g}"


def gemm_bound(a, b_t, extra=0.0):
    """Section 8 for a @ b_t: K * 2^-23 * (|a| @ |b_t|) with 2 more ulps for
    the scaling/bias additions."""
    k = a.shape[-1]
    return (k + 2) * EPS32 * (np.abs(a) @ np.abs(b_t)) + extra
