"""Quantize and dequantize checks on designed inputs: blocks of rounding
boundaries, subnormals, saturation, NaN and infinities inside blocks, zero
blocks, with per-tensor, per-axis and block scales. The reference is
Octet's: its MXFP8 quantizer and dequantize for power-of-two block scales
(numerics.md section 11), and for other scales the target's formula
y = x / scale evaluated in FP32 (one IEEE division) and encoded by the
reference's encoder (numerics.md section 2)."""

import numpy as np

from .. import _core as octet
from .. import _lib, quantizers, recipes
from . import casts, rules
from .formats import FORMATS, reference_context

BLOCK = 32
MX_ELEMENTS = ("e4m3fn", "e5m2")  # MXFP8's element formats (OCP MX v1.0)
KINDS = ("random", "rounding boundaries", "subnormals", "saturation", "NaN inside block", "inf inside block",
         "zero block")


def designed_y(fmt, rng):
    """[len(KINDS), 2 * BLOCK] values to hand the encoder (x / scale), two
    blocks per kind, and the kind of each element."""
    g = fmt.grid
    boundary = np.concatenate([g[1:-1], (g[:-1] + g[1:]) / 2])
    rows = []
    for kind in KINDS:
        n = 2 * BLOCK
        if kind == "random":
            row = rng.standard_normal(n) * fmt.max / 8
        elif kind == "rounding boundaries":
            row = rng.choice(boundary, n) * rng.choice([-1, 1], n)
            row[0] = fmt.max  # the largest value sets the block's amax: the boundaries stay boundaries
        elif kind == "subnormals":
            row = rng.uniform(0, fmt.min_normal, n) * rng.choice([-1, 1], n)
            row[0] = fmt.max
        elif kind == "saturation":
            top = fmt.grid[-1] + (fmt.grid[-1] - fmt.max)  # just past the tie beyond the largest value
            row = np.concatenate([rng.uniform(fmt.max, top, n // 2), rng.uniform(top, 4 * fmt.max, n - n // 2)])
            row *= rng.choice([-1, 1], n)
        elif kind == "NaN inside block":
            row = rng.standard_normal(n) * fmt.max / 8
            row[[3, BLOCK + 5]], row[7] = np.nan, -np.nan
        elif kind == "inf inside block":
            row = rng.standard_normal(n) * fmt.max / 8
            row[[2, BLOCK + 9]], row[11] = np.inf, -np.inf
        else:
            row = np.zeros(n)
            row[1::2] = -0.0
        rows.append(row)
    y = np.array(rows, dtype=np.float32)
    return y, np.repeat(np.array(KINDS, dtype=object)[:, None], 2 * BLOCK, axis=1)


def _mx_reference(fmt, x):
    """Octet's MXFP8 quantize of x (rowwise 1x32): (codes, decode scales X)."""
    ctx = reference_context()
    recipe = recipes.MXFP8Scaling(format="e4m3" if fmt.name == "e4m3fn" else "e5m2")
    q = quantizers.Quantizer(recipe, "input").quantize(ctx, x, usages=octet.ROWWISE)
    grid = q.component(octet.ROWWISE_SCALE_INV)
    return q.codes().astype(np.int16), np.exp2(grid.astype(np.float64) - 127).astype(np.float32)


def check_quantize(op, fn, fmt_name, granularity, saturate, mode, seed=0):
    """fn(x [R, C] float32, scale, axis, block_size, saturate) -> codes
    [R, C]; scale: a float32 scalar ("per-tensor"), [R] ("per-axis",
    axis 0) or [R, C / 32] ("blocked", axis 1, block_size 32)."""
    fmt = FORMATS[fmt_name]
    rng = np.random.default_rng(seed)
    y, labels = designed_y(fmt, rng)
    rows = y.shape[0]
    if granularity == "blocked" and fmt.name in MX_ELEMENTS:
        x = y  # the MX scales come from the data
        ref, scale = _mx_reference(fmt, x)
        y_enc = x / np.repeat(scale, BLOCK, axis=1)
        op.details["reference"] = "Octet's MXFP8 quantizer (numerics.md section 11), its E8M0 scales given"
        got = fn(x, scale, 1, BLOCK, saturate)
        casts.classify_encode(op, fmt, y_enc, ref, got, lambda i: casts.show_f32(x.reshape(-1)[i]),
                              labels=labels)
        return
    if granularity == "per-tensor":
        scales = [np.float32(0.25), np.float32(0.37)]
    elif granularity == "per-axis":
        scales = [np.exp2(rng.integers(-3, 4, rows)).astype(np.float32),
                  rng.uniform(0.1, 3, rows).astype(np.float32)]
    else:
        scales = [np.exp2(rng.integers(-3, 4, (rows, 2))).astype(np.float32),
                  rng.uniform(0.1, 3, (rows, 2)).astype(np.float32)]
    op.details["reference"] = "y = x / scale in FP32, encoded by the reference (numerics.md section 2)"
    for scale in scales:
        full = {"per-tensor": lambda s: s, "per-axis": lambda s: s[:, None],
                "blocked": lambda s: np.repeat(s, BLOCK, axis=1)}[granularity](scale)
        x = (y * full).astype(np.float32)
        y_enc = (x / full).astype(np.float32)
        axis, block = (0, 0) if granularity != "blocked" else (1, BLOCK)
        got = fn(x, scale, axis, block, saturate)
        casts.classify_encode(op, fmt, y_enc, casts.reference_encode(fmt, y_enc, saturate), got,
                              lambda i, x=x: casts.show_f32(x.reshape(-1)[i]), labels=labels)


def _mx_tensor(fmt, codes, scale_codes):
    ctx = reference_context()
    t = ctx.empty(codes.shape, fmt.dtype, usages=octet.ROWWISE, scaling_mode=octet.SCALING_MXFP8_1X32)
    for which, data in ((octet.DATA, codes), (octet.ROWWISE_SCALE_INV, scale_codes)):
        data = np.ascontiguousarray(data, dtype=np.uint8)
        octet._check(_lib.lib.octet_tensor_copy_from_host(t.handle, which, data.ctypes.data, data.nbytes))
    return t


def check_dequantize(op, fn, fmt_name, granularity):
    """fn(codes [R, C] uint8, scale, axis, block_size) -> float32 [R, C],
    x' = decode(code) * scale. Every code of the format appears."""
    fmt = FORMATS[fmt_name]
    codes = np.tile(np.arange(fmt.ncodes, dtype=np.uint8), max(1, 128 // fmt.ncodes)).reshape(-1, 2 * BLOCK)
    rows = codes.shape[0]
    if granularity == "blocked" and fmt.name in MX_ELEMENTS:
        scale_codes = np.array([[127, 0], [254, 120], [130, 127], [1, 200]], dtype=np.uint8)[:rows]
        scale = np.exp2(scale_codes.astype(np.float64) - 127).astype(np.float32)
        ref = reference_context().dequantize(_mx_tensor(fmt, codes, scale_codes)).values()
        op.details["reference"] = "Octet's dequantize of the MXFP8 tensor (numerics.md section 11)"
        cases = [(scale, ref, 1, BLOCK)]
    else:
        per = {"per-tensor": [np.float32(0.25), np.float32(0.37)],
               "per-axis": [np.linspace(0.1, 3, rows).astype(np.float32)],
               "blocked": [np.linspace(0.1, 3, rows * 2).reshape(rows, 2).astype(np.float32)]}[granularity]
        cases = []
        for scale in per:
            full = {"per-tensor": lambda s: s, "per-axis": lambda s: s[:, None],
                    "blocked": lambda s: np.repeat(s, BLOCK, axis=1)}[granularity](scale)
            cases.append((scale, (fmt.table[codes] * full).astype(np.float32), 0 if granularity != "blocked" else 1,
                          0 if granularity != "blocked" else BLOCK))
        op.details["reference"] = "decode(code) * scale in FP32 (numerics.md sections 3 and 7)"
    for scale, ref, axis, block in cases:
        got = np.asarray(fn(codes, scale, axis, block), dtype=np.float32).reshape(codes.shape)
        op.checked += codes.size
        differ = got.view(np.uint32) != ref.view(np.uint32)
        if not differ.any():
            continue
        where = np.argwhere(differ)
        full = np.broadcast_to(_per_element(scale, granularity, axis), codes.shape)
        verdicts, names, explain = rules.decode_classes(fmt, codes[differ], ref[differ].view(np.uint32),
                                                        got[differ].view(np.uint32), "fp32")
        for key in sorted(set(zip(verdicts, names))):
            sel = np.nonzero((verdicts == key[0]) & (names == key[1]))[0]
            examples = [{"input": f"{fmt.describe(codes[tuple(where[j])])} scale {float(full[tuple(where[j])])!r}",
                         "target": casts.show_f32(got[tuple(where[j])]),
                         "reference": casts.show_f32(ref[tuple(where[j])])} for j in casts._spread(sel)]
            op.add(key[0], key[1], explain[key], sel.size, examples)


def _per_element(scale, granularity, axis):
    scale = np.asarray(scale, dtype=np.float32)
    if scale.ndim == 0:
        return scale
    if scale.ndim == 1:
        return scale[:, None]
    return np.repeat(scale, BLOCK, axis=1)
