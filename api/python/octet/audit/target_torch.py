"""Target `torch`: float8 casts both ways (Tensor.to) for every float8
dtype the installed torch has, and torch._scaled_mm with per-tensor and
per-row scales."""

import numpy as np

from . import checks

NAME, INSTALL = "torch", "pip install torch"
DTYPES = {"e4m3fn": "float8_e4m3fn", "e5m2": "float8_e5m2", "e4m3fnuz": "float8_e4m3fnuz",
          "e5m2fnuz": "float8_e5m2fnuz", "e8m0fnu": "float8_e8m0fnu"}


def load():
    import torch
    return torch, torch.__version__


def device_problem(torch, device):
    if device == "cuda" and not torch.cuda.is_available():
        return "CUDA is not available to this torch (torch.cuda.is_available() is False)"
    return None


def _call(f):
    """Runs f, turning torch's refusal (RuntimeError, NotImplementedError,
    TypeError) into Unsupported."""
    def wrapped(*args):
        try:
            return f(*args)
        except (RuntimeError, NotImplementedError, TypeError) as e:
            raise checks.Unsupported(f"torch refuses it: {str(e).splitlines()[0][:200]}") from None
    return wrapped


def build(torch, device):
    dev = torch.device(device)
    ops = []
    for fmt, attr in DTYPES.items():
        dt = getattr(torch, attr, None)
        if dt is None:
            continue
        sources = {"fp32": lambda a: torch.from_numpy(a),
                   "bf16": lambda a: torch.from_numpy(a.view(np.int16)).view(torch.bfloat16),
                   "fp16": lambda a: torch.from_numpy(a)}
        for source, make in sources.items():
            fn = _call(lambda a, make=make, dt=dt: make(np.ascontiguousarray(a)).to(dev).to(dt)
                       .view(torch.uint8).cpu().numpy())
            ops.append(checks.encode(f"cast {source}->{fmt} (Tensor.to)", fmt, source, None, fn))
        for dest, tdt, view in (("fp32", torch.float32, torch.int32), ("bf16", torch.bfloat16, torch.int16),
                                ("fp16", torch.float16, torch.int16)):
            fn = _call(lambda c, dt=dt, tdt=tdt, view=view: torch.from_numpy(np.ascontiguousarray(c)).to(dev)
                       .view(dt).to(tdt).view(view).cpu().numpy())
            ops.append(checks.decode(f"cast {fmt}->{dest} (Tensor.to)", fmt, dest, fn))
    fp4 = getattr(torch, "float4_e2m1fn_x2", None)
    if fp4 is not None:
        try:
            torch.zeros(2, device=dev).to(fp4)
            reason = None
        except (RuntimeError, NotImplementedError, TypeError) as e:
            reason = f"torch offers no cast to float4_e2m1fn_x2: {str(e).splitlines()[0][:160]}"
        if reason:
            ops.append(checks.unsupported("cast fp32->e2m1fn (float4_e2m1fn_x2)", "cast", reason))
    if hasattr(torch, "_scaled_mm"):
        ops += scaled_mm_checks(torch, dev)
    return ops


def scaled_mm_checks(torch, dev):
    def make(fa, fb, scaling, out):
        ta, tb = getattr(torch, DTYPES[fa]), getattr(torch, DTYPES[fb])
        out_dtype = torch.float32 if out == "fp32" else torch.bfloat16

        def fn(a, b, sa, sb, out_name):
            A = torch.from_numpy(np.ascontiguousarray(a)).to(dev).view(ta)
            B = torch.from_numpy(np.ascontiguousarray(b)).to(dev).view(tb)  # [N, K]; _scaled_mm takes B^T column-major
            if scaling == "tensor":
                sA, sB = torch.tensor(float(sa), device=dev), torch.tensor(float(sb), device=dev)
            else:
                sA = torch.from_numpy(np.ascontiguousarray(sa)).to(dev)
                sB = torch.from_numpy(np.ascontiguousarray(sb).reshape(1, -1)).to(dev)
            d = torch._scaled_mm(A, B.t(), scale_a=sA, scale_b=sB, out_dtype=out_dtype)
            return d.to(torch.float32).cpu().numpy()
        name = f"_scaled_mm {fa} x {fb} {'per-tensor' if scaling == 'tensor' else 'rowwise'} -> {out}"
        return checks.gemm_check(name, fa, fb, scaling, out, _call(fn))
    combos = [("e4m3fn", "e4m3fn", "tensor", "fp32"), ("e4m3fn", "e4m3fn", "tensor", "bf16"),
              ("e4m3fn", "e5m2", "tensor", "bf16"), ("e5m2", "e4m3fn", "tensor", "bf16"),
              ("e4m3fn", "e4m3fn", "row", "bf16"), ("e4m3fnuz", "e4m3fnuz", "tensor", "bf16")]
    return [make(*c) for c in combos]
