"""Target `transformer_engine`: Transformer Engine's quantizers
(transformer_engine.pytorch's Float8Quantizer with a given scale,
Float8CurrentScalingQuantizer, MXFP8Quantizer; each quantize, and the
quantized tensor's dequantize) and its FP8 GEMM (general_gemm, where its
cpp_extensions export it), on CUDA only. Written against TE's public
Python API and never run on a machine with Transformer Engine: the tests
drive it through a fake module (docs/audit.md says so)."""

import numpy as np

from . import checks, scaled

NAME, INSTALL = "transformer_engine", "pip install transformer_engine[pytorch]"
TEX_DTYPES = {"e4m3fn": "kFloat8E4M3", "e5m2": "kFloat8E5M2"}  # transformer_engine_torch.DType members


def load():
    import transformer_engine
    import transformer_engine.pytorch  # noqa: F401  (the quantizers and GEMM)
    return transformer_engine, getattr(transformer_engine, "__version__", "unknown")


def device_problem(te, device):
    if device != "cuda":
        return "Transformer Engine runs on CUDA devices only (--device cuda)"
    import torch
    if not torch.cuda.is_available():
        return "CUDA is not available to torch (torch.cuda.is_available() is False)"
    return None


def _call(f):
    def wrapped(*args):
        try:
            return f(*args)
        except (RuntimeError, NotImplementedError, TypeError, AssertionError, ValueError) as e:
            raise checks.Unsupported(f"Transformer Engine refuses it: {str(e).splitlines()[0][:200]}") from None
    return wrapped


def _tex_dtype(fmt):
    import transformer_engine_torch as tex
    return getattr(tex.DType, TEX_DTYPES[fmt])


def _codes(t):
    import torch
    return t.view(torch.uint8).cpu().numpy()


def build(te, device):
    import torch
    tp = te.pytorch
    dev = torch.device(device)  # "cuda": device_problem refuses anything else before build is called
    ops = []
    for fmt in TEX_DTYPES:
        if hasattr(tp, "Float8Quantizer"):
            def given(x, scale, fmt=fmt):
                q = tp.Float8Quantizer(scale=torch.tensor([float(scale)], dtype=torch.float32, device=dev),
                                       amax=torch.zeros(1, dtype=torch.float32, device=dev), fp8_dtype=_tex_dtype(fmt))
                return _codes(q(torch.from_numpy(np.ascontiguousarray(x)).to(dev))._data).reshape(x.shape)
            ops.append(checks.Check(f"Float8Quantizer fp32->{fmt} per-tensor", "quantize",
                                    lambda op, mode, fn=_call(given), fmt=fmt: scaled.check_given_scale(op, fn, fmt),
                                    format=fmt))

            def dequantize(codes, scale, axis, block, fmt=fmt):
                q = tp.Float8Quantizer(scale=torch.tensor([1.0 / float(scale)], dtype=torch.float32, device=dev),
                                       amax=torch.zeros(1, dtype=torch.float32, device=dev), fp8_dtype=_tex_dtype(fmt))
                t = q(torch.zeros(codes.shape, dtype=torch.float32, device=dev))
                t._data.copy_(torch.from_numpy(np.ascontiguousarray(codes)).to(dev))
                t._scale_inv.fill_(float(scale))
                return t.dequantize(dtype=torch.float32).cpu().numpy()
            ops.append(checks.dequantize_check(f"Float8Tensor.dequantize {fmt}->fp32 per-tensor", fmt, "per-tensor",
                                               _call(dequantize)))
        if hasattr(tp, "Float8CurrentScalingQuantizer"):
            for pow2 in (False, True):
                def current(x, fmt=fmt, pow2=pow2):
                    q = tp.Float8CurrentScalingQuantizer(fp8_dtype=_tex_dtype(fmt), device=dev, force_pow_2_scales=pow2,
                                                         amax_epsilon=0.0)
                    t = q(torch.from_numpy(np.ascontiguousarray(x)).to(dev))
                    scale = getattr(q, "scale", None)  # the quantizer's scale buffer, which the quantize fills
                    if isinstance(scale, torch.Tensor) and scale.numel() == 1:
                        return _codes(t._data).reshape(x.shape), np.float32(scale.float().cpu().item())
                    with np.errstate(divide="ignore"):  # else from the tensor's 1 / scale (may lose its last bit)
                        return (_codes(t._data).reshape(x.shape),
                                np.float32(1) / np.float32(t._scale_inv.float().cpu().reshape(-1)[0].item()))
                ops.append(checks.Check(f"Float8CurrentScalingQuantizer fp32->{fmt}" + (" pow2 scales" if pow2 else ""),
                                        "quantize", lambda op, mode, fn=_call(current), fmt=fmt, pow2=pow2:
                                        scaled.check_current_scaling(op, fn, fmt, False, pow2, 0.0), format=fmt))
        if hasattr(tp, "MXFP8Quantizer"):
            def mx(x, fmt=fmt):
                q = tp.MXFP8Quantizer(fp8_dtype=_tex_dtype(fmt), rowwise=True, columnwise=False)
                t = q(torch.from_numpy(np.ascontiguousarray(x)).to(dev))
                rows, blocks = x.shape[0], x.shape[1] // scaled.BLOCK
                scale = t._rowwise_scale_inv.view(torch.uint8)[:rows, :blocks]  # the grid may be padded
                return _codes(t._rowwise_data).reshape(x.shape), scale.cpu().numpy()
            ops.append(checks.Check(f"MXFP8Quantizer fp32->{fmt} 1x32", "quantize",
                                    lambda op, mode, fn=_call(mx), fmt=fmt: scaled.check_mx(op, fn, fmt, "rceil"),
                                    format=fmt, granularity="blocked"))
    ops += gemm_checks(te, dev)
    return ops


def gemm_checks(te, dev):
    import torch
    tp = te.pytorch
    try:
        from transformer_engine.pytorch.cpp_extensions import general_gemm
    except ImportError as e:
        return [checks.unsupported("general_gemm", "gemm", f"not in this Transformer Engine: {e}")]
    if not hasattr(tp, "Float8Quantizer"):
        return [checks.unsupported("general_gemm", "gemm", "this Transformer Engine has no Float8Quantizer")]
    from .formats import FORMATS

    def operand(codes, scale, fmt):
        """A Float8Tensor holding exactly `codes` with scale_inv `scale`."""
        x = (FORMATS[fmt].table[codes] * np.float32(scale)).astype(np.float32)
        q = tp.Float8Quantizer(scale=torch.tensor([1.0 / float(scale)], dtype=torch.float32, device=dev),
                               amax=torch.zeros(1, dtype=torch.float32, device=dev), fp8_dtype=_tex_dtype(fmt))
        t = q(torch.from_numpy(x).to(dev))
        t._data.copy_(torch.from_numpy(np.ascontiguousarray(codes)).to(dev))
        return t

    def make(fa, fb, out):
        out_dtype = torch.float32 if out == "fp32" else torch.bfloat16

        def fn(a, b, sa, sb, out_name):
            workspace = torch.empty(32 * 1024 * 1024, dtype=torch.uint8, device=dev)
            # general_gemm(A, B) computes B A^T ("TN"): D [M, N] = a [M, K] b [N, K]^T
            d = general_gemm(operand(b, sb, fb), operand(a, sa, fa), workspace, out_dtype=out_dtype)
            d = d[0] if isinstance(d, (tuple, list)) else d
            return d.to(torch.float32).cpu().numpy()
        return checks.gemm_check(f"general_gemm {fa} x {fb} per-tensor -> {out}", fa, fb, "tensor", out, _call(fn))
    return [make("e4m3fn", "e4m3fn", "fp32"), make("e4m3fn", "e4m3fn", "bf16"), make("e5m2", "e4m3fn", "bf16")]
