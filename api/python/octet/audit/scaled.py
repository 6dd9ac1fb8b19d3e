"""Checks of quantizers that compute their own scales (torchao's float8
training casts and to_mx, Transformer Engine's quantizers): the target's
scales are compared with Octet's quantizer's on the same designed inputs,
and its codes with the reference's encoding of the data under the
target's own scales, so that a wrong scale and a wrong element are told
apart.

- per-tensor / per-row current scaling: the reference scale is numerics.md
  section 14.1's (Octet's CurrentScaling quantizer, per tensor; the same
  rule per row, section 16); codes = fp8_saturating(x * scale) (section 7);
- MX (1x32, E8M0): the reference scale is Octet's MXFP8 quantizer's for
  FLOOR and RCEIL (section 11); for other rounding modes (torchao's CEIL,
  EVEN) the scale may be Octet's FLOOR scale or one code above it (OCP MX
  v1.0 section 6.3 leaves the conversion's rounding open beyond its FLOOR
  example, not the power of two's neighbourhood); codes =
  fp8_saturating(x / X) with the target's X (section 11)."""

import numpy as np

from .. import _core as octet
from .. import quantizers, recipes
from . import casts
from .formats import FORMATS, reference_context
from .quantize import BLOCK, designed_y
from .report import CONVENTION, WRONG

E8M0 = FORMATS["e8m0fnu"]
FP8_MAX = {"e4m3fn": 448.0, "e5m2": 57344.0}
EMAX = {"e4m3fn": 8, "e5m2": 15}  # exponent of the element format's largest power of two

NAN_SCALE = ("NaN scale for a block with NaN",
             "a NaN element may make its block's scale NaN (E8M0 0xff: every element of the block decodes to "
             "NaN, OCP MX v1.0 section 5.4.1); the reference takes the scale from the finite elements "
             "(numerics.md section 11)")
MX_ROUNDING = ("scale rounding mode",
               "the target's rounding mode has no counterpart in the reference; a scale equal to the reference's "
               "FLOOR scale (OCP MX v1.0 section 6.3) or one code above it is the mode's choice")
NAN_TENSOR_SCALE = ("NaN scale for data with NaN",
                    "a NaN element may make the scale NaN (the amax of data with NaN is not fixed by OCP FP8 "
                    "v1.0); the reference's amax ignores NaN (numerics.md sections 6 and 14.1)")
SCALE_RULE = {
    "mx": "the block scale of numerics.md section 11 (Octet's MXFP8 quantizer, the same rounding mode): "
          "X = 2^(floor(log2 amax) - emax) (FLOOR, OCP MX v1.0 section 6.3) or E8M0-CEIL(amax / fp8_max) "
          "(RCEIL), amax over the block's finite elements, clamped to 0x00..0xfe",
    "tensor": "scale = fp8_max / max(amax, epsilon) in FP32, 1 when that is 0, inf or NaN (numerics.md "
              "section 14.1): a finite, non-zero scale, so that every finite element survives and 1 / scale "
              "dequantizes",
}


def mx_inputs(fmt, seed=0):
    """[R, 2 * BLOCK] float32 data and the kind of each element: the designed
    blocks of quantize.designed_y at three magnitudes, and blocks aimed at
    the scale: amax at fp8_max * 2^k and one FP32 step above and below it
    (the scale's rounding boundaries), tiny blocks whose scale is the
    smallest code 0x00 (amax down to FP32 subnormals), huge blocks up to
    FLT_MAX (the largest codes, FLOOR's clamp), and a block with +inf
    among large finite values."""
    rng = np.random.default_rng(seed)
    y, labels = designed_y(fmt, rng)
    rows, kinds = [], []
    for k in (0, -20, 30):
        rows.append(y * np.float32(2.0 ** k))
        kinds.append(labels)
    n = 2 * BLOCK

    def block(kind, amax, rest=None):
        row = rng.uniform(-1, 1, n) * amax * 0.5 if rest is None else rest
        row[0], row[BLOCK] = amax, -amax
        with np.errstate(over="ignore"):
            rows.append(np.asarray(row, dtype=np.float32)[None, :])
        kinds.append(np.full((1, n), kind, dtype=object))
    top = np.float32(FP8_MAX[fmt.name])
    for k in (-100, -3, 0, 7, 60):
        edge = np.float32(top * np.float32(2.0 ** k))
        for a in (edge, np.nextafter(edge, np.float32(np.inf)), np.nextafter(edge, np.float32(0)),
                  np.float32(2.0 ** (k + EMAX[fmt.name]))):
            block("scale boundaries", float(a))
    for a in (2.0 ** -110, 2.0 ** -118, 2.0 ** -125, 2.0 ** -127, 2.0 ** -133, 1e-44):
        block("tiny block (scale code 0x00)", a)
    for a in (2.0 ** 120, 2.0 ** 126 * 1.9, 2.0 ** 127, 3.4028234663852886e38):
        block("huge block", a)
    inf_row = rng.uniform(-1, 1, n) * 1000
    inf_row[[4, BLOCK + 6]] = np.inf
    block("inf amax", 1000.0, inf_row)
    return np.concatenate(rows).astype(np.float32), np.concatenate(kinds)


def mx_reference_scales(fmt, x, rounding):
    """Octet's MXFP8 scale codes [R, C / 32] of x (numerics.md section 11)."""
    ctx = reference_context()
    recipe = recipes.MXFP8Scaling(format="e4m3" if fmt.name == "e4m3fn" else "e5m2", rounding=rounding)
    q = quantizers.Quantizer(recipe, "input").quantize(ctx, x, usages=octet.ROWWISE)
    return q.component(octet.ROWWISE_SCALE_INV).astype(np.int16)


def _describe_block(x, r, b):
    blk = x[r, b * BLOCK:(b + 1) * BLOCK]
    finite = blk[np.isfinite(blk)]
    amax = float(np.max(np.abs(finite))) if finite.size else 0.0
    extra = (" with NaN" if np.isnan(blk).any() else "") + (" with inf" if np.isinf(blk).any() else "")
    return f"block [{r}, {b * BLOCK}:{(b + 1) * BLOCK}] finite amax {casts.show_f32(amax)}{extra}"


def check_mx(op, fn, fmt_name, rounding, seed=0):
    """fn(x [R, C] float32) -> (codes [R, C] uint8, scale codes [R, C / 32]
    uint8) with the target's `rounding` ("floor", "rceil", or another mode
    name, judged by MX_ROUNDING)."""
    fmt = FORMATS[fmt_name]
    x, kinds = mx_inputs(fmt, seed)
    codes, got_scale = fn(x)
    codes = np.asarray(codes, dtype=np.uint8).reshape(x.shape)
    got_scale = np.asarray(got_scale, dtype=np.uint8).reshape(x.shape[0], -1).astype(np.int16)
    own = rounding in ("floor", "rceil")
    ref_scale = mx_reference_scales(fmt, x, rounding if own else "floor")
    op.details.update({"rounding": rounding, "reference": "Octet's MXFP8 quantizer, " + (
        f"{rounding.upper()} scales" if own else "FLOOR scales (the target's mode has no counterpart)")
        + "; codes from the target's own scales (numerics.md section 11)"})
    blocks = x.reshape(x.shape[0], -1, BLOCK)
    has_nan = np.isnan(blocks).any(axis=2)
    block_kind = kinds.reshape(x.shape[0], -1, BLOCK)[:, :, 1]
    op.checked += got_scale.size
    differ = got_scale != ref_scale
    convention = differ & has_nan & (got_scale == 0xFF)
    if not own:
        convention |= differ & ~has_nan & np.isin(got_scale - ref_scale, [0, 1]) & (got_scale != 0xFF)
    for verdict, mask in ((CONVENTION, convention), (WRONG, differ & ~convention)):
        for kind in sorted(set(block_kind[mask])):
            where = np.argwhere(mask & (block_kind == kind))
            if verdict == CONVENTION:
                name, rule = NAN_SCALE if has_nan[tuple(where[0])] else MX_ROUNDING
                name = f"scale: {name}"
            else:
                name, rule = f"scale: {kind}", SCALE_RULE["mx"]
            examples = [{"input": _describe_block(x, r, b), "target": E8M0.describe(got_scale[r, b]),
                         "reference": E8M0.describe(ref_scale[r, b])} for r, b in casts._spread(list(map(tuple, where)))]
            op.add(verdict, name, rule, len(where), examples)
    # Elements, under the target's own scales (blocks with a NaN scale decode to NaN whatever their codes).
    keep = np.repeat(got_scale != 0xFF, BLOCK, axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        X = np.repeat(np.exp2(got_scale.astype(np.float64) - 127).astype(np.float32), BLOCK, axis=1)
        y = (x / X).astype(np.float32)
    casts.classify_encode(op, fmt, y[keep], casts.reference_encode(fmt, y[keep], True), codes[keep],
                          lambda i: casts.show_f32(x[keep][i]) + f" / X {casts.show_f32(X[keep][i])}",
                          labels=np.array([f"elements: {k}" for k in kinds[keep]], dtype=object))


def tensor_inputs(fmt, seed=0):
    """Designed tensors for current scaling: one [2, BLOCK] tensor per kind of
    quantize.designed_y (so that NaN and inf stay in their own tensors),
    scaled off the element range."""
    rng = np.random.default_rng(seed)
    y, labels = designed_y(fmt, rng)
    x = (y * np.float32(3.7e-3)).astype(np.float32)
    return [(x[i].reshape(2, BLOCK), labels[i, 0]) for i in range(x.shape[0])]


def reference_tensor_scale(fmt, x, per_row, power_of_two, epsilon):
    """numerics.md section 14.1's scale of x: per tensor from Octet's
    CurrentScaling quantizer; per row (section 16's rowwise copy) the same
    rule on each row, through the same quantizer row by row."""
    ctx = reference_context()
    recipe = recipes.CurrentScaling(format="e4m3" if fmt.name == "e4m3fn" else "e5m2", amax_epsilon=epsilon,
                                    power_of_two_scales=power_of_two)
    quantizer = quantizers.Quantizer(recipe, "input")
    parts = [x[i:i + 1] for i in range(x.shape[0])] if per_row else [x]
    scales = [np.float32(quantizer.quantize(ctx, np.ascontiguousarray(p), usages=octet.ROWWISE).component(octet.SCALE))
              for p in parts]
    return np.array(scales, dtype=np.float32).reshape(-1, 1) if per_row else np.float32(scales[0])


def check_current_scaling(op, fn, fmt_name, per_row, power_of_two, epsilon, seed=0):
    """fn(x [R, C] float32) -> (codes [R, C] uint8, scale: float32 scalar or
    [R, 1]), codes = fp8_saturating(x * scale)."""
    fmt = FORMATS[fmt_name]
    op.details.update({"granularity": "per-row" if per_row else "per-tensor", "power_of_two_scales": power_of_two,
                       "reference": "numerics.md section 14.1's scale (Octet's CurrentScaling, amax_epsilon "
                                    f"{epsilon:g}); codes = fp8_saturating(x * the target's scale)"})
    for x, kind in tensor_inputs(fmt, seed):
        codes, scale = fn(x)
        scale = np.asarray(scale, dtype=np.float32).reshape(-1, 1) if per_row else np.float32(scale)
        ref = reference_tensor_scale(fmt, x, per_row, power_of_two, epsilon)
        got_s, ref_s = np.atleast_1d(scale).reshape(-1), np.atleast_1d(ref).reshape(-1)
        op.checked += got_s.size
        differ = got_s.view(np.uint32) != ref_s.view(np.uint32)
        rows = np.nonzero(differ)[0]
        if rows.size:
            data_nan = np.isnan(x).any() if not per_row else np.isnan(x[rows]).any(axis=1)
            nan_ok = np.atleast_1d(data_nan & np.isnan(got_s[rows]))
            for verdict, sel in ((CONVENTION, rows[nan_ok]), (WRONG, rows[~nan_ok])):
                if sel.size:
                    name, rule = (f"scale: {NAN_TENSOR_SCALE[0]}", NAN_TENSOR_SCALE[1]) if verdict == CONVENTION \
                        else (f"scale: {kind}", SCALE_RULE["tensor"])
                    amax = [np.max(np.abs(np.where(np.isnan(x), 0, x)[r] if per_row else np.where(np.isnan(x), 0, x)))
                            for r in sel]
                    op.add(verdict, name, rule, sel.size,
                           [{"input": f"{kind} {'row ' + str(r) if per_row else 'tensor'} amax "
                                      f"{casts.show_f32(a)}", "target": casts.show_f32(got_s[r]),
                             "reference": casts.show_f32(ref_s[r])} for r, a in zip(sel, amax)][:3])
        with np.errstate(over="ignore", invalid="ignore"):
            y = (x * scale).astype(np.float32)
        casts.classify_encode(op, fmt, y, casts.reference_encode(fmt, y, True), np.asarray(codes).reshape(x.shape),
                              lambda i, x=x: casts.show_f32(x.reshape(-1)[i]),
                              labels=np.full(x.shape, f"elements: {kind}", dtype=object))


GIVEN_SCALES = (np.float32(0.25), np.float32(3.7), np.float32(1.37 * 2.0 ** -10))


def check_given_scale(op, fn, fmt_name, seed=0):
    """fn(x [R, C] float32, scale float32) -> codes [R, C] uint8 with the
    scale given (delayed scaling: the scale comes from elsewhere), codes =
    fp8_saturating(x * scale) (numerics.md section 7)."""
    fmt = FORMATS[fmt_name]
    op.details.update({"granularity": "per-tensor", "scales": [float(s) for s in GIVEN_SCALES],
                       "reference": "fp8_saturating(x * scale), one FP32 multiply (numerics.md section 7)"})
    for scale in GIVEN_SCALES:
        for x, kind in tensor_inputs(fmt, seed):
            codes = np.asarray(fn(x, scale)).reshape(x.shape)
            with np.errstate(over="ignore", invalid="ignore"):
                y = (x * scale).astype(np.float32)
            casts.classify_encode(op, fmt, y, casts.reference_encode(fmt, y, True), codes,
                                  lambda i, x=x, s=scale: f"{casts.show_f32(x.reshape(-1)[i])} * {s!r}",
                                  labels=np.full(x.shape, f"elements: {kind}", dtype=object))
