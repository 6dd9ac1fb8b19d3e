"""Cast checks: FP32/BF16/FP16 -> narrow format (encode) and narrow format
-> FP32/BF16/FP16 (decode), against the reference's codecs, every
disagreement classified by rules written from the specs (rules.py)."""

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import _core as octet
from . import inputs, rules
from .formats import reference_context
from .report import CONVENTION, WRONG

NO_CODE = -1  # the reference has no code for this input (E2M1: NaN; beyond 6 without saturation)


def reference_encode(fmt, values, saturate):
    """The reference's codes (int16) of float32 `values`; NO_CODE where the
    format has none (numerics.md section 1, E2M1)."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    if fmt.unsigned_pow2:  # convert to E8M0: CEIL, clamped (numerics.md section 5)
        ctx = reference_context()
        return ctx.convert(ctx.tensor(values), octet.E8M0).codes().astype(np.int16).reshape(values.shape)
    if fmt.bits == 4:
        a = np.abs(values)
        refused = np.isnan(values) | (~np.bool_(saturate) & ((a >= 7) | np.isinf(values)))
        codes = octet.fp8_encode(np.where(refused, np.float32(0), values), fmt.dtype, saturate).astype(np.int16)
        codes[refused] = NO_CODE
        return codes
    return octet.fp8_encode(values, fmt.dtype, saturate).astype(np.int16)


def _spread(idx, k=3):
    """k indices spread over idx (first, middle, last)."""
    if len(idx) <= k:
        return list(idx)
    return [idx[0], idx[len(idx) // 2], idx[-1]]


def show_f32(v):
    v = np.float32(v)
    return f"{int(v.view(np.uint32)):#010x} ({rules.value_text(v)})"


def classify_encode(op, fmt, values, ref, got, show_input, target_rules=None, labels=None):
    """Records the elements where `got` (the target's codes) differs from
    `ref` (the reference's), each in the class rules.encode_classes gives
    (prefixed with its element's label, e.g. the kind of block, if given).
    Elements are grouped by integer class keys (numpy), so that 2^24
    disagreements of a chunk cost a few passes over arrays."""
    got = np.asarray(got).astype(np.int16).reshape(-1)
    ref = np.asarray(ref).reshape(-1)
    values = np.asarray(values).reshape(-1)
    if got.size != values.size:
        raise ValueError(f"the target gave {got.size} codes for {values.size} inputs (one code per input)")
    op.checked += values.size
    idx = np.nonzero(got != ref)[0]
    if idx.size == 0:
        return
    v, r, t = values[idx].astype(np.float32), ref[idx], got[idx]
    keys, classes = rules.encode_classes(fmt, v, r, t, target_rules or {})
    keys = keys.astype(np.int64)
    if labels is not None:
        names, label_of = np.unique(np.asarray(labels, dtype=str).reshape(-1)[idx], return_inverse=True)
        keys = label_of.reshape(-1).astype(np.int64) * 1000 + keys
        classes = {lab * 1000 + k: (vd, f"{names[lab]}: {nm}", rule)
                   for k, (vd, nm, rule) in classes.items() for lab in range(len(names))}
    present, counts = np.unique(keys, return_counts=True)
    for key, count in sorted(zip(present.tolist(), counts.tolist()), key=lambda kc: classes[kc[0]][:2]):
        verdict, name, rule = classes[key]
        where = np.arange(keys.size) if present.size == 1 else np.nonzero(keys == key)[0]
        examples = [{"input": show_input(idx[i]), "target": fmt.describe(t[i]),
                     "reference": fmt.describe(r[i]) if r[i] != NO_CODE else "no code"} for i in _spread(where)]
        op.add(verdict, name, rule, count, examples)


def _windows(chunks, width):
    batch = []
    for c in chunks:
        batch.append(c)
        if len(batch) == width:
            yield batch
            batch = []
    if batch:
        yield batch


def check_encode(op, fn, fmt, source, saturate, mode, target_rules=None):
    """fn(array) -> codes (uint8, one per element) of `source` data ("fp32":
    float32; "bf16": uint16 BF16 bit patterns; "fp16": float16).
    saturate: True/False, or None when the target does not say: then the
    mode with fewer wrong elements on the quick sample is taken (and
    named in the details)."""
    if fmt.unsigned_pow2:
        saturate = True  # E8M0's range is clamped or NaN whatever the mode (rules.E8M0_RANGE)
    elif saturate is None:
        sample = inputs.quick_fp32(fmt)
        if source == "bf16":
            sample = inputs.bf16_bits_to_f32(inputs.all_bf16_bits())
        elif source == "fp16":
            sample = inputs.all_fp16().astype(np.float32)
        probe = {"fp32": lambda: fn(sample), "bf16": lambda: fn(inputs.all_bf16_bits()),
                 "fp16": lambda: fn(inputs.all_fp16())}[source]()
        wrong = {}
        for s in (True, False):
            trial = type(op)(op.name, op.kind)
            classify_encode(trial, fmt, sample, reference_encode(fmt, sample, s), probe, lambda i: "", target_rules)
            wrong[s] = trial.counts()["wrong"]
        saturate = wrong[True] <= wrong[False]
        op.details["mode"] = ("saturating" if saturate else "non-saturating") + \
            " (the target does not say; the mode it matches best)"
    if "mode" not in op.details and not fmt.unsigned_pow2:
        op.details["mode"] = "saturating" if saturate else "non-saturating"
    if source == "bf16":
        bits = inputs.all_bf16_bits()
        values = inputs.bf16_bits_to_f32(bits)
        classify_encode(op, fmt, values, reference_encode(fmt, values, saturate), fn(bits),
                        lambda i: f"{int(bits[i]):#06x} ({rules.value_text(values[i])})", target_rules)
        return
    if source == "fp16":
        halves = inputs.all_fp16()
        values = halves.astype(np.float32)
        classify_encode(op, fmt, values, reference_encode(fmt, values, saturate), fn(halves),
                        lambda i: f"{int(halves.view(np.uint16)[i]):#06x} ({rules.value_text(values[i])})",
                        target_rules)
        return
    if mode == "full":
        op.details["inputs"] = "every FP32 bit pattern"
        width = max(os.cpu_count() or 1, 1)

        def one_chunk(chunk):  # the reference, the target and the classes of one chunk, on a worker thread
            part = type(op)(op.name, op.kind)
            classify_encode(part, fmt, chunk, reference_encode(fmt, chunk, saturate), fn(chunk),
                            lambda i: show_f32(chunk[i]), target_rules)
            return part
        with ThreadPoolExecutor(max_workers=width) as pool:
            for batch in _windows(inputs.full_fp32_chunks(), width):
                for part in pool.map(one_chunk, batch):  # merged in input order: examples stay deterministic
                    op.checked += part.checked
                    for cls in part.classes.values():
                        op.add(cls["verdict"], cls["class"], cls["rule"], cls["count"], cls["examples"])
        return
    values = inputs.quick_fp32(fmt)
    op.details["inputs"] = f"stratified FP32 sample of {values.size}"
    classify_encode(op, fmt, values, reference_encode(fmt, values, saturate), fn(values),
                    lambda i: show_f32(values[i]), target_rules)


def reference_decode(fmt, codes, dest):
    """The reference's decoding of codes to dest ("fp32", "bf16", "fp16"),
    as bit patterns (uint32 or uint16)."""
    if fmt.bits == 4:  # no plain E2M1 tensors: decode (exact), then narrow (exact for E2M1's values)
        v = octet.fp8_decode(codes, fmt.dtype)
        ctx = reference_context()
        if dest == "fp32":
            return v.view(np.uint32)
        out = ctx.convert(ctx.tensor(v), octet.BF16 if dest == "bf16" else octet.FP16)
        return (out.codes() if dest == "bf16" else out.numpy()).view(np.uint16)
    ctx = reference_context()
    out = ctx.convert(ctx.tensor(codes, dtype=fmt.dtype), {"fp32": octet.FP32, "bf16": octet.BF16,
                                                           "fp16": octet.FP16}[dest])
    data = out.codes() if dest == "bf16" else out.numpy()
    return data.view(np.uint32 if dest == "fp32" else np.uint16).reshape(-1)


def check_decode(op, fn, fmt, dest):
    """fn(codes uint8) -> dest values as bit patterns (uint32 for fp32,
    uint16 for bf16/fp16), every code of the format."""
    codes = inputs.all_codes(fmt)
    ref = reference_decode(fmt, codes, dest)
    got = np.asarray(fn(codes)).reshape(-1).view(ref.dtype)
    op.checked += codes.size
    idx = np.nonzero(got != ref)[0]
    if idx.size == 0:
        return
    verdicts, names, explanations = rules.decode_classes(fmt, codes[idx], ref[idx], got[idx], dest)
    show = {"fp32": lambda b: show_f32(np.uint32(b).view(np.float32)),
            "fp16": lambda b: f"{int(b):#06x} ({rules.value_text(np.uint16(b).view(np.float16))})",
            "bf16": lambda b: f"{int(b):#06x} ({rules.value_text(inputs.bf16_bits_to_f32(b))})"}[dest]
    for key in sorted(set(zip(verdicts, names))):
        mask = np.nonzero((verdicts == key[0]) & (names == key[1]))[0]
        examples = [{"input": fmt.describe(codes[idx[i]]), "target": show(got[idx[i]]),
                     "reference": show(ref[idx[i]])} for i in _spread(mask)]
        op.add(key[0], key[1], explanations[key], mask.size, examples)


__all__ = ["check_encode", "check_decode", "reference_encode", "reference_decode", "classify_encode",
           "CONVENTION", "WRONG"]
