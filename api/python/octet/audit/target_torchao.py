"""Target `torchao`: its float8 training casts (torchao.float8: the scale
from the amax, tensorwise and axiswise, with and without power-of-two
scales, then the saturated cast) and its MX cast (to_mx: E8M0 block
scales of 32 in each ScaleCalculationMode, FP8 elements), where the
installed torchao has them (scaled.py judges them)."""

import numpy as np

from . import checks, scaled

NAME, INSTALL = "torchao", "pip install torchao"
EPS = 1e-12  # torchao.float8's amax floor (float8_utils.EPS): a parameter of its scale, given to the reference


def load():
    import torchao
    return torchao, getattr(torchao, "__version__", "unknown")


def device_problem(torchao, device):
    import torch
    if device == "cuda" and not torch.cuda.is_available():
        return "CUDA is not available to torch (torch.cuda.is_available() is False)"
    return None


def _call(f):
    def wrapped(*args):
        try:
            return f(*args)
        except (RuntimeError, NotImplementedError, TypeError, AssertionError) as e:
            raise checks.Unsupported(f"torchao refuses it: {str(e).splitlines()[0][:200]}") from None
    return wrapped


def _dtypes(torch):
    return {"e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def float8_checks(torch, dev):
    try:
        from torchao.float8.config import ScalingGranularity
        from torchao.float8.float8_scaling_utils import hp_tensor_to_float8_dynamic
        from torchao.float8.float8_training_tensor import LinearMMConfig
    except ImportError as e:
        return [checks.unsupported("float8 hp_tensor_to_float8_dynamic", "quantize", f"not in this torchao: {e}")]
    ops = []
    for fmt, dt in _dtypes(torch).items():
        for per_row in (False, True):
            for pow2 in (False, True):
                def fn(x, dt=dt, per_row=per_row, pow2=pow2):
                    kw = {"scaling_granularity": ScalingGranularity.AXISWISE, "axiswise_dim": -1} if per_row else {}
                    t = hp_tensor_to_float8_dynamic(torch.from_numpy(np.ascontiguousarray(x)).to(dev), dt,
                                                    LinearMMConfig(), round_scales_to_power_of_2=pow2, **kw)
                    return (t._data.view(torch.uint8).cpu().numpy(), t._scale.to(torch.float32).cpu().numpy())
                name = (f"float8 hp_tensor_to_float8_dynamic fp32->{fmt} {'axiswise' if per_row else 'tensorwise'}"
                        + (" pow2 scales" if pow2 else ""))
                ops.append(checks.Check(name, "quantize",
                                        lambda op, mode, fn=_call(fn), fmt=fmt, per_row=per_row, pow2=pow2:
                                        scaled.check_current_scaling(op, fn, fmt, per_row, pow2, EPS),
                                        format=fmt))
    return ops


def mx_checks(torch, dev):
    try:
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.mx_tensor import to_mx
    except ImportError as e:
        return [checks.unsupported("to_mx", "quantize", f"not in this torchao: {e}")]
    ops = []
    for fmt, dt in _dtypes(torch).items():
        for mode in ScaleCalculationMode:
            def fn(x, dt=dt, mode=mode):
                scale, data = to_mx(torch.from_numpy(np.ascontiguousarray(x)).to(dev), dt, scaled.BLOCK, mode)
                return data.view(torch.uint8).cpu().numpy(), scale.view(torch.uint8).cpu().numpy()
            ops.append(checks.Check(f"to_mx fp32->{fmt} 1x32 {mode.value.upper()}", "quantize",
                                    lambda op, m, fn=_call(fn), fmt=fmt, mode=mode:
                                    scaled.check_mx(op, fn, fmt, mode.value), format=fmt, granularity="blocked"))
    return ops


def mx_gemm_checks(torch, dev):
    """MXTensor matmul (torch.mm of two MXTensors), with the kernel torchao
    offers on this device: EMULATED (dequantize, then a float32 mm) on the
    CPU, AUTO (its MX GEMM) on CUDA. The operands are built from the
    check's codes and E8M0 scales."""
    try:
        from torchao.prototype.mx_formats.mx_tensor import MXTensor
        from torchao.quantization.quantize_.common.kernel_preference import KernelPreference
    except ImportError as e:
        return [checks.unsupported("MXTensor mm", "gemm", f"not in this torchao: {e}")]
    kernel = KernelPreference.EMULATED if dev.type == "cpu" else KernelPreference.AUTO
    dts = _dtypes(torch)

    def make(fa, fb):
        def fn(a, b, sa, sb, out):
            def mx(codes, scale, fmt):
                q = torch.from_numpy(np.ascontiguousarray(codes)).to(dev).view(dts[fmt])
                s = torch.from_numpy(np.ascontiguousarray(scale)).to(dev).view(torch.float8_e8m0fnu)
                return MXTensor(q, s, dts[fmt], scaled.BLOCK, torch.float32, kernel, None, False)
            d = torch.mm(mx(a, sa, fa), mx(b, sb, fb).t())
            return d.to(torch.float32).cpu().numpy()
        return checks.gemm_check(f"MXTensor mm {fa} x {fb} 1x32 -> fp32 ({kernel.name.lower()})", fa, fb, "mx",
                                 "fp32", _call(fn))
    return [make("e4m3fn", "e4m3fn"), make("e5m2", "e5m2")]


def build(torchao, device):
    import torch
    dev = torch.device(device)
    return float8_checks(torch, dev) + mx_checks(torch, dev) + mx_gemm_checks(torch, dev)
