"""GEMM checks: the target's scaled FP8 GEMM against the reference's on
the same FP8 codes and scales, within numerics.md section 8's bound
(section 16 for per-row scales), plus the error of both against a
float64 result."""

import numpy as np

from .. import _core as octet
from .. import _lib
from .formats import FORMATS, reference_context
from .report import WRONG

OUT_PRECISION = {"fp32": 24, "bf16": 8}  # significand bits of the output dtype
OUT_TINY = {"fp32": 2.0 ** -149, "bf16": 2.0 ** -133}


def shapes(mode):
    quick = [(16, 32, 16), (32, 64, 48)]
    return quick + [(64, 256, 128), (128, 512, 64)] if mode == "full" else quick


def operands(fmt, rows, k, rng):
    """Random finite codes [rows, k], with one row of subnormal codes and one
    of +-max codes when there are rows enough (products at both ends)."""
    table = fmt.table
    finite = np.nonzero(np.isfinite(table))[0].astype(np.uint8)
    codes = rng.choice(finite, size=(rows, k))
    if rows >= 4:
        sub = np.nonzero(np.isfinite(table) & (np.abs(table) < fmt.min_normal) & (table != 0))[0].astype(np.uint8)
        codes[1] = rng.choice(sub, size=k)
        big = np.nonzero(np.abs(table) == fmt.max)[0].astype(np.uint8)
        codes[2] = rng.choice(big, size=k)
    return codes


def scales(scaling, rows, rng, k=None):
    """Per-tensor: a float32 power of two; "row": [rows, 1] powers of two;
    "mx": E8M0 codes [rows, k / 32] near 127 (X = 2^(c - 127))."""
    if scaling == "mx":
        return rng.integers(127 - 6, 127 + 7, size=(rows, k // 32)).astype(np.uint8)
    if scaling == "tensor":
        return np.float32(2.0 ** int(rng.integers(-4, 5)))
    return np.exp2(rng.integers(-4, 5, size=(rows, 1))).astype(np.float32)


def _reference_operand(ctx, fmt, codes, scale, scaling):
    if scaling == "mx":
        from .quantize import _mx_tensor
        return _mx_tensor(fmt, codes, scale)
    if scaling == "tensor":
        t = ctx.empty(codes.shape, fmt.dtype, usages=octet.ROWWISE)
        t.set_scale(1.0 / float(scale))  # a power of two: scale_inv is exactly `scale`
    else:
        t = ctx.empty(codes.shape, fmt.dtype, usages=octet.ROWWISE, scaling_mode=octet.SCALING_PER_ROW)
        grid = np.ascontiguousarray(scale, dtype=np.float32).reshape(-1, 1)
        octet._check(_lib.lib.octet_tensor_copy_from_host(t.handle, octet.ROWWISE_SCALE_INV, grid.ctypes.data,
                                                          grid.nbytes))
    data = np.ascontiguousarray(codes, dtype=np.uint8)
    octet._check(_lib.lib.octet_tensor_copy_from_host(t.handle, octet.DATA, data.ctypes.data, data.nbytes))
    return t


def reference_gemm(fmt_a, fmt_b, a, b, sa, sb, scaling, out):
    """D = (a * sa) (b * sb)^T on the reference backend (TN: a [M, K],
    b [N, K] as stored), as float32."""
    ctx = reference_context()
    ta = _reference_operand(ctx, fmt_a, a, sa, scaling)
    tb = _reference_operand(ctx, fmt_b, b, sb, scaling)
    return ctx.gemm(ta, tb, out_dtype=octet.FP32 if out == "fp32" else octet.BF16).values()


def check_gemm(op, fn, fmt_a, fmt_b, scaling, out, mode, seed=0):
    """fn(a_codes [M, K], b_codes [N, K], sa, sb, out) -> D [M, N] (float32
    values), D = (A sa)(B sb)^T; sa, sb: float32 scalars (scaling "tensor")
    or [M, 1] / [N, 1] arrays (scaling "row") or E8M0 block-scale codes
    [M, K / 32] / [N, K / 32] (scaling "mx", 1x32 blocks along K:
    numerics.md sections 11 and 12). Both operands hold finite
    codes only (NaN results have no specified sign: numerics.md 13)."""
    fa, fb = FORMATS[fmt_a], FORMATS[fmt_b]
    rng = np.random.default_rng(seed)
    worst, err_target, err_ref = 0.0, 0.0, 0.0
    for m, k, n in shapes(mode):
        a, b = operands(fa, m, k, rng), operands(fb, n, k, rng)
        sa, sb = scales(scaling, m, rng, k), scales(scaling, n, rng, k)
        got = np.asarray(fn(a, b, sa, sb, out), dtype=np.float32).reshape(m, n)
        ref = reference_gemm(fa, fb, a, b, sa, sb, scaling, out).reshape(m, n)
        da, db = fa.table[a].astype(np.float64), fb.table[b].astype(np.float64)
        if scaling == "mx":  # the scales inside the sum: each element times its block's X
            da, db = da * np.repeat(np.exp2(sa - 127.0), 32, axis=1), db * np.repeat(np.exp2(sb - 127.0), 32, axis=1)
            s = np.ones((1, 1))
        else:
            s = np.asarray(sa, np.float64).reshape(-1, 1) * np.asarray(sb, np.float64).reshape(1, -1)
        exact = (da @ db.T) * s
        magnitude = (np.abs(da) @ np.abs(db).T) * s
        sum_bound = k * 2.0 ** -23 * magnitude
        bound = sum_bound + 2.0 ** (1 - OUT_PRECISION[out]) * (np.abs(ref) + sum_bound) + OUT_TINY[out]
        diff = np.abs(got.astype(np.float64) - ref)
        op.checked += got.size
        same = (got.view(np.uint32) == ref.view(np.uint32)) | (np.isnan(got) & np.isnan(ref))
        inside = ~same & (diff <= bound)
        op.within_bound += int(inside.sum())
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(same, 0.0, diff / bound)
        worst = max(worst, float(np.nanmax(ratio)) if ratio.size else 0.0)
        err_target = max(err_target, float(np.max(np.abs(got - exact))))
        err_ref = max(err_ref, float(np.max(np.abs(ref - exact))))
        beyond = np.argwhere(~same & ~inside)
        if beyond.size:
            pick = [beyond[0], beyond[len(beyond) // 2], beyond[-1]][:len(beyond)]
            op.add(WRONG, "beyond the bound", "numerics.md section 8: |D - D_ref| <= K 2^-23 sum|a b| |sa sb| "
                   "(+ the output's rounding)", len(beyond),
                   [{"input": f"D[{i}, {j}] of {m}x{k}x{n}", "target": repr(float(got[i, j])),
                     "reference": repr(float(ref[i, j])), "float64": repr(float(exact[i, j])),
                     "bound": f"{bound[i, j]:.3g}"} for i, j in pick])
    op.details.update({"shapes_mkn": [list(s) for s in shapes(mode)], "max_ratio_to_bound": round(worst, 6),
                       "max_abs_error_vs_float64": {"target": err_target, "reference": err_ref}})
