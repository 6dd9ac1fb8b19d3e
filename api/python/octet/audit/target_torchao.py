"""Target `torchao`: its float8 training cast (torchao.float8's saturated
cast to float8) and its MX cast (to_mx: E8M0 block scales and FP8
elements), where the installed torchao has them."""

import numpy as np

from . import checks

NAME, INSTALL = "torchao", "pip install torchao"


def load():
    import torchao
    return torchao, getattr(torchao, "__version__", "unknown")


def device_problem(torchao, device):
    import torch
    if device == "cuda" and not torch.cuda.is_available():
        return "CUDA is not available to torch (torch.cuda.is_available() is False)"
    return None


def build(torchao, device):
    import torch
    dev = torch.device(device)
    ops = []
    try:
        from torchao.float8.float8_utils import to_fp8_saturated
    except ImportError as e:
        ops.append(checks.unsupported("float8 to_fp8_saturated", "cast", f"not in this torchao: {e}"))
    else:
        for fmt, dt in (("e4m3fn", torch.float8_e4m3fn), ("e5m2", torch.float8_e5m2)):
            def fn(a, dt=dt):
                y = to_fp8_saturated(torch.from_numpy(np.ascontiguousarray(a)).to(dev), dt)
                return y.view(torch.uint8).cpu().numpy()
            ops.append(checks.encode(f"float8 to_fp8_saturated fp32->{fmt}", fmt, "fp32", True, fn))
    ops.append(checks.unsupported("to_mx fp32->e4m3fn 1x32", "quantize",
                                  "not yet checked by octet.audit (to_mx computes its own E8M0 scales)"))
    return ops
