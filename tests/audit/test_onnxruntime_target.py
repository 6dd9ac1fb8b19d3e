"""octet.audit onnxruntime --quick on the CPU: Cast, QuantizeLinear and
DequantizeLinear, the audit's verdicts checked against ONNX Cast's tables
(spec.py), which fix the overflow mode by the saturate attribute."""

import ctypes

import numpy as np
import pytest

import judge
import spec

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")


def ops(report, prefix):
    return [op for op in report.to_json()["targets"][0]["operations"] if op["name"].startswith(prefix)]


def ort_cast(values, fmt, saturate):
    """ONNX Runtime's Cast of float32 values to fmt, its codes, run here
    directly (not through the audit)."""
    from onnx import TensorProto as T, helper
    t = getattr(T, {"e4m3fn": "FLOAT8E4M3FN", "e5m2": "FLOAT8E5M2", "e4m3fnuz": "FLOAT8E4M3FNUZ",
                    "e5m2fnuz": "FLOAT8E5M2FNUZ"}[fmt])
    node = helper.make_node("Cast", ["x"], ["y"], to=t, saturate=int(saturate))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", T.FLOAT, None)],
                              [helper.make_tensor_value_info("y", t, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    b = s.io_binding()
    b.bind_cpu_input("x", values)
    out = ort.OrtValue.ortvalue_from_shape_and_type(list(values.shape), t)
    b.bind_ortvalue_output("y", out)
    s.run_with_iobinding(b)
    return np.frombuffer(ctypes.string_at(out.data_ptr(), values.size), np.uint8)


@pytest.mark.parametrize("fmt", sorted(spec.FORMATS))
@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_verdicts_agree_with_onnx_cast_tables(ort_report, fmt, saturate):
    for source in ("fp32", "fp16", "bf16"):
        op = ops(ort_report, f"Cast {source}->{fmt} saturate={saturate}")[0]
        assert op["verdict"] != "not supported", op
        assert judge.encode_verdict_errors(op, bool(saturate)) == []
    op = ops(ort_report, f"Cast fp32->{fmt} saturate={saturate}")[0]
    values = spec.probe_values(fmt)
    bad = judge.independent_mismatches(fmt, values, ort_cast(values, fmt, saturate), bool(saturate))
    if bad:
        assert op["verdict"] == "wrong", bad[:3]
        assert {c["class"] for c in op["classes"] if c["verdict"] == "wrong"}, op
    if op["verdict"] != "wrong":
        assert bad == []


def test_decode_verdicts_agree_with_the_spec(ort_report):
    for fmt in spec.FORMATS:
        for dest in ("fp32", "fp16", "bf16"):
            op = ops(ort_report, f"Cast {fmt}->{dest}")[0]
            assert judge.decode_errors(op) == [], op


def test_quantize_and_dequantize_are_checked(ort_report):
    q = ops(ort_report, "QuantizeLinear fp32->e4m3fn")
    assert {op["details"]["granularity"] for op in q} == {"per-tensor", "per-axis", "blocked"}
    for op in q + ops(ort_report, "DequantizeLinear e4m3fn") + ops(ort_report, "DequantizeLinear e5m2->"):
        assert op["counts"]["checked"] > 0 and op["verdict"] != "not supported", op
    for op in ops(ort_report, "QuantizeLinear") + ops(ort_report, "DequantizeLinear"):
        for cls in op["classes"]:
            if cls["verdict"] == "convention difference":
                assert cls["class"].endswith(("NaN code or sign", "NaN payload or sign", "no E2M1 code")), cls


def test_exit_status_is_one_exactly_when_something_is_wrong(ort_report):
    wrong = [op for op in ort_report.to_json()["targets"][0]["operations"] if op["verdict"] == "wrong"]
    assert ort_report.exit_status == (1 if wrong else 0)
