"""octet.audit transformer_engine, exercised without Transformer Engine
(it needs CUDA and is not installable here): a fake minimal
`transformer_engine` (its quantizer classes and general_gemm, computed
with torch on the CPU) is put in sys.modules, the target's checks are
built and run, and the test checks what the target called and that a
deliberately wrong fake (MXFP8 scales rounded down, FLOOR, where
MXFP8Quantizer documents RCEIL; current scaling taking an infinite amax)
is reported wrong in the classes the specs give."""

import math
import sys
import types

import numpy as np
import pytest

import spec

torch = pytest.importorskip("torch")

DTYPES = {"kFloat8E4M3": torch.float8_e4m3fn, "kFloat8E5M2": torch.float8_e5m2}
MAX = {torch.float8_e4m3fn: 448.0, torch.float8_e5m2: 57344.0}
EMAX = {torch.float8_e4m3fn: 8, torch.float8_e5m2: 15}


def saturated(y, dt):
    return y.clamp(-MAX[dt], MAX[dt]).to(dt).view(torch.uint8)


class Float8Tensor:
    def __init__(self, data, scale_inv):
        self._data, self._scale_inv = data, scale_inv

    def dequantize(self, dtype=torch.float32):
        return (self._data.view(self.fp8).to(torch.float32) * self._scale_inv).to(dtype)


def fake_te(calls):
    tex = types.ModuleType("transformer_engine_torch")
    tex.DType = types.SimpleNamespace(**DTYPES)

    class Float8Quantizer:
        def __init__(self, scale, amax, fp8_dtype):
            calls.append(("Float8Quantizer", float(scale[0])))
            self.scale, self.dt = scale.float(), fp8_dtype

        def __call__(self, x):
            t = Float8Tensor(saturated(x.float() * self.scale, self.dt), (1.0 / self.scale).float())
            t.fp8 = self.dt
            return t

    class Float8CurrentScalingQuantizer:
        def __init__(self, fp8_dtype, device, force_pow_2_scales=False, amax_epsilon=0.0):
            calls.append(("Float8CurrentScalingQuantizer", force_pow_2_scales))
            self.dt, self.pow2 = fp8_dtype, force_pow_2_scales

        def __call__(self, x):  # the bug: an infinite amax gives the scale 0
            amax = x.abs().max().float().reshape(1)
            # torch.div of two tensors: one FP32 division (a Python float over a tensor is a reciprocal times it)
            scale = torch.where(amax == 0, torch.ones_like(amax), torch.div(torch.full_like(amax, MAX[self.dt]), amax))
            if self.pow2:
                scale = torch.exp2(torch.floor(torch.log2(scale)))
            self.scale = scale  # as TE's quantizer: its scale buffer holds the scale the quantize used
            t = Float8Tensor(saturated(x.float() * scale, self.dt), 1.0 / scale)
            t.fp8 = self.dt
            return t

    class MXFP8Quantizer:
        def __init__(self, fp8_dtype, rowwise=True, columnwise=True):
            calls.append(("MXFP8Quantizer", rowwise, columnwise))
            self.dt = fp8_dtype

        def __call__(self, x):  # the bug: FLOOR scales (OCP's example) where TE documents RCEIL
            rows, cols = x.shape
            blocks = x.float().reshape(rows, cols // 32, 32)
            finite = torch.where(torch.isfinite(blocks), blocks.abs(), torch.zeros_like(blocks))
            amax = finite.amax(-1)
            e = torch.where(amax > 0, torch.floor(torch.log2(amax)), torch.full_like(amax, -1000.0))
            code = torch.clamp(e - EMAX[self.dt] + 127, 0, 254)
            X = torch.exp2(code.to(torch.float64) - 127).to(torch.float32)
            t = types.SimpleNamespace()
            t._rowwise_data = saturated(blocks / X[..., None], self.dt).reshape(rows, cols)
            padded = torch.zeros(rows + 128, cols // 32 + 4, dtype=torch.uint8)
            padded[:rows, :cols // 32] = code.to(torch.uint8)
            t._rowwise_scale_inv = padded
            return t

    def general_gemm(A, B, workspace, out_dtype=None):
        calls.append(("general_gemm", out_dtype))
        a = A._data.view(A.fp8).to(torch.float64) * float(A._scale_inv)
        b = B._data.view(B.fp8).to(torch.float64) * float(B._scale_inv)
        return ((b @ a.T).to(out_dtype), None, None, None)

    te = types.ModuleType("transformer_engine")
    te.__version__ = "0.0-fake"
    tp = types.ModuleType("transformer_engine.pytorch")
    tp.Float8Quantizer, tp.Float8CurrentScalingQuantizer, tp.MXFP8Quantizer = (
        Float8Quantizer, Float8CurrentScalingQuantizer, MXFP8Quantizer)
    cpp = types.ModuleType("transformer_engine.pytorch.cpp_extensions")
    cpp.general_gemm = general_gemm
    te.pytorch, tp.cpp_extensions = tp, cpp
    return {"transformer_engine": te, "transformer_engine.pytorch": tp,
            "transformer_engine.pytorch.cpp_extensions": cpp, "transformer_engine_torch": tex}


@pytest.fixture(scope="module")
def fake_report():
    calls = []
    saved = {k: sys.modules.get(k) for k in fake_te(calls)}
    sys.modules.update(fake_te(calls))
    try:
        from octet.audit import checks, target_transformer_engine as target
        te, version = target.load()
        assert version == "0.0-fake"
        ops = target.build(te, "cpu")  # the fake computes on the CPU; the real target is only built for CUDA
        result = checks.run_checks("transformer_engine", "cpu", version, ops, "quick").to_json()
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return result, calls


def ops(result, prefix):
    return [op for op in result["operations"] if op["name"].startswith(prefix)]


def test_the_target_calls_the_quantizers_and_the_gemm(fake_report):
    result, calls = fake_report
    names = {c[0] for c in calls}
    assert names == {"Float8Quantizer", "Float8CurrentScalingQuantizer", "MXFP8Quantizer", "general_gemm"}
    assert ("MXFP8Quantizer", True, False) in calls
    assert {c[1] for c in calls if c[0] == "general_gemm"} == {torch.float32, torch.bfloat16}
    assert all(op["verdict"] != "not supported" for op in result["operations"]), result["operations"]


def test_a_correct_quantize_dequantize_and_gemm_pass(fake_report):
    result, _ = fake_report
    for op in ops(result, "Float8Quantizer") + ops(result, "Float8Tensor.dequantize") + ops(result, "general_gemm"):
        assert op["verdict"] in ("bit-exact", "within bound", "convention difference"), op
        assert op["counts"]["checked"] > 0


def test_floor_scales_for_mxfp8_are_wrong_in_the_scale_classes_only(fake_report):
    """RCEIL (numerics.md section 11, TE's MXFP8) and OCP's FLOOR differ on
    a block exactly when amax / 2^floor(log2 amax) > fp8_max / 2^emax; the
    designed blocks have such blocks, so the audit must say wrong, in scale
    classes, while the elements (encoded with the fake's own scales) pass."""
    result, _ = fake_report
    for fmt in ("e4m3fn", "e5m2"):
        op = ops(result, f"MXFP8Quantizer fp32->{fmt}")[0]
        wrong = [c for c in op["classes"] if c["verdict"] == "wrong"]
        assert op["verdict"] == "wrong" and wrong, op
        for cls in wrong:
            assert cls["class"].startswith("scale:"), cls
            for ex in cls["examples"]:
                amax = float(ex["input"].split("finite amax ")[1].split(" (")[1].rstrip(")").split(")")[0])
                floor_code = spec.mx_floor_scale(fmt, [amax])
                assert int(ex["target"].split()[0], 16) == floor_code, ex
                top = spec.FORMATS[fmt][3]
                assert amax / 2.0 ** math.floor(math.log2(amax)) > top / 2.0 ** spec.EMAX[fmt], ex


def test_an_infinite_amax_giving_scale_zero_is_wrong(fake_report):
    result, _ = fake_report
    for op in ops(result, "Float8CurrentScalingQuantizer"):
        wrong = {c["class"] for c in op["classes"] if c["verdict"] == "wrong"}
        assert wrong == {"scale: inf inside block"}, op["classes"]
        assert spec.current_scale(op["details"]["format"], [np.inf, 1.0]) == 1.0
