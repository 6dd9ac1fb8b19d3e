"""Target `transformer_engine`: imported only when named; where it is
installed, its operations are listed as not yet checked (this audit does
not drive Transformer Engine's Python API yet)."""

from . import checks

NAME, INSTALL = "transformer_engine", "pip install transformer_engine[pytorch]"


def load():
    import transformer_engine
    return transformer_engine, getattr(transformer_engine, "__version__", "unknown")


def device_problem(te, device):
    if device != "cuda":
        return "Transformer Engine runs on CUDA devices only (--device cuda)"
    return None


def build(te, device):
    reason = "not yet checked by octet.audit (Transformer Engine's quantize, dequantize and GEMM)"
    return [checks.unsupported("quantize/dequantize (Float8Quantizer)", "quantize", reason),
            checks.unsupported("general_gemm fp8", "gemm", reason)]
