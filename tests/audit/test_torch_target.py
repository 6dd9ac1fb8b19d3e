"""octet.audit torch --quick on the CPU: torch's float8 casts and
_scaled_mm, the audit's verdicts checked against spec.py's encoders."""

import numpy as np
import pytest

import judge
import spec

torch = pytest.importorskip("torch")


def ops(report, prefix):
    return [op for op in report.to_json()["targets"][0]["operations"] if op["name"].startswith(prefix)]


def test_the_target_ran_with_its_version(torch_report):
    t = torch_report.to_json()["targets"][0]
    assert t["status"] == "run" and t["version"] == torch.__version__ and t["device"] == "cpu"
    names = [op["name"] for op in t["operations"]]
    assert "cast fp32->e4m3fn (Tensor.to)" in names and "cast e5m2->bf16 (Tensor.to)" in names
    assert any(n.startswith("_scaled_mm e4m3fn x e4m3fn rowwise") for n in names)


@pytest.mark.parametrize("fmt", sorted(spec.FORMATS))
def test_encode_verdicts_agree_with_the_spec(torch_report, fmt):
    """torch does not say which overflow mode .to() takes: the audit names
    the one it matched; in that mode the examples it reports must be
    judged as the spec judges them, and torch's casts of spec.py's probe
    values must be wrong exactly when the audit says so."""
    dtype = getattr(torch, {"e4m3fn": "float8_e4m3fn", "e5m2": "float8_e5m2", "e4m3fnuz": "float8_e4m3fnuz",
                            "e5m2fnuz": "float8_e5m2fnuz"}[fmt])
    op = ops(torch_report, f"cast fp32->{fmt} ")[0]
    saturate = op["details"]["mode"].startswith("saturating")
    assert judge.encode_verdict_errors(op, saturate) == []
    values = spec.probe_values(fmt)
    codes = torch.from_numpy(values).to(dtype).view(torch.uint8).numpy()
    bad = judge.independent_mismatches(fmt, values, codes, saturate)
    if bad:
        assert op["verdict"] == "wrong", bad[:3]
    if op["verdict"] != "wrong":
        assert bad == []


def test_decode_verdicts_agree_with_the_spec(torch_report):
    for fmt in spec.FORMATS:
        for dest in ("fp32", "bf16", "fp16"):
            op = ops(torch_report, f"cast {fmt}->{dest} ")[0]
            assert judge.decode_errors(op) == []
            assert op["counts"]["checked"] == 256


def test_e8m0_conventions_are_the_ones_the_specs_leave_open(torch_report):
    op = ops(torch_report, "cast fp32->e8m0fnu")[0]
    for cls in op["classes"]:
        assert cls["verdict"] == "convention difference", cls
        for ex in cls["examples"]:
            x = judge.input_value(ex["input"], "fp32")
            got = judge.code_of(ex["target"])
            if cls["class"] == "E8M0 rounding direction":
                assert 2.0 ** (got - 127) in (2.0 ** np.floor(np.log2(x)), 2.0 ** np.ceil(np.log2(x))), ex
            elif cls["class"] == "no E8M0 value":
                assert x <= 0 or np.isinf(x), ex


def test_scaled_mm_is_within_the_bound_or_not_supported(torch_report):
    for op in ops(torch_report, "_scaled_mm"):
        assert op["verdict"] in ("bit-exact", "within bound", "not supported"), op
        if op["verdict"] != "not supported":
            assert op["details"]["max_ratio_to_bound"] <= 1
            assert op["counts"]["checked"] > 0


def test_torch_passes(torch_report):
    assert torch_report.exit_status == 0, torch_report.text()
