"""The audit fed implementations given as Python functions: one with a
single rounding bug (ties away from zero) must be reported wrong in the
class "tie" only; the same function without the bug must be bit-exact;
a GEMM off by 1e-3 must be beyond the bound."""

import numpy as np
import pytest

import octet.audit
from octet.audit import checks
import spec


def encoder(fmt, saturate, ties_away):
    def fn(values):
        return np.array([spec.encode(fmt, x, saturate, ties_away) for x in values.tolist()], dtype=np.uint8)
    return fn


def run(check):
    report = octet.audit.run_custom("python", [check], mode="quick")
    return report, report.to_json()["targets"][0]["operations"][0]


@pytest.mark.parametrize("fmt", ["e4m3fn", "e5m2"])
def test_ties_away_from_zero_is_wrong_at_the_ties_only(fmt):
    report, op = run(checks.encode("ties away", fmt, "fp32", True, encoder(fmt, True, ties_away=True)))
    assert op["verdict"] == "wrong" and report.exit_status == 1
    assert [c["class"] for c in op["classes"]] == ["tie"]
    tie = op["classes"][0]
    assert tie["count"] > 0 and len(tie["examples"]) == 3
    for ex in tie["examples"]:
        x = float(np.uint32(int(ex["input"].split()[0], 16)).view(np.float32))
        assert spec.is_tie(fmt, x), ex
        assert int(ex["target"].split()[0], 16) != int(ex["reference"].split()[0], 16)
    assert "tie" in report.text() and "wrong: python/ties away" in report.text()


@pytest.mark.parametrize("fmt", ["e4m3fn", "e5m2"])
@pytest.mark.parametrize("saturate", [True, False])
def test_the_spec_encoder_is_bit_exact(fmt, saturate):
    report, op = run(checks.encode("spec", fmt, "fp32", saturate, encoder(fmt, saturate, ties_away=False)))
    assert op["verdict"] == "bit-exact", op["classes"]
    assert op["counts"]["checked"] > 100000 and report.exit_status == 0


def test_a_gemm_off_by_a_relative_1e_3_is_beyond_the_bound():
    def decoded(codes, fmt):
        return octet.fp8_decode(codes, {"e4m3fn": octet.E4M3, "e5m2": octet.E5M2}[fmt]).astype(np.float64)

    def gemm(error):
        def fn(a, b, sa, sb, out):
            d = (decoded(a, "e4m3fn") * np.asarray(sa, np.float64).reshape(-1, 1)) @ \
                (decoded(b, "e4m3fn") * np.asarray(sb, np.float64).reshape(-1, 1)).T
            return (d * (1 + error)).astype(np.float32)
        return fn
    _, bad = run(checks.gemm_check("off", "e4m3fn", "e4m3fn", "tensor", "fp32", gemm(1e-3)))
    assert bad["verdict"] == "wrong" and bad["classes"][0]["class"] == "beyond the bound"
    assert bad["details"]["max_ratio_to_bound"] > 1
    _, good = run(checks.gemm_check("float64", "e4m3fn", "e4m3fn", "row", "fp32", gemm(0.0)))
    assert good["verdict"] in ("bit-exact", "within bound") and good["details"]["max_ratio_to_bound"] <= 1


def test_bad_arguments_name_the_argument_and_the_rule():
    with pytest.raises(ValueError, match="target must be one of"):
        octet.audit.run("tensorflow")
    with pytest.raises(ValueError, match="mode must be 'quick' or 'full'"):
        octet.audit.run("torch", mode="slow")
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda'"):
        octet.audit.run("torch", device="tpu")
    with pytest.raises(ValueError, match="format must be one of"):
        run(checks.encode("x", "e3m4", "fp32", True, lambda v: v))
