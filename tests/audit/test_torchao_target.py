"""octet.audit torchao: without torchao the target is reported not run,
with its install command (checked here always, with torchao hidden); with
torchao (not installed in CI), its float8 training casts and to_mx are
run and the audit's verdicts are checked against spec.py's independent
OCP MX FLOOR scales, FP8 encoders and current-scaling rule."""

import importlib.util
import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import spec

ROOT = pathlib.Path(__file__).resolve().parents[2]
HAVE_TORCHAO = importlib.util.find_spec("torchao") is not None


def test_without_torchao_it_is_not_run_with_the_install_command(tmp_path):
    hidden = tmp_path / "torchao"
    hidden.mkdir()
    (hidden / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'torchao'\", name='torchao')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT / "api" / "python")]))
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "octet.audit", "torchao", "--quick", "--json", str(out)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not run: torchao is not installed" in r.stdout and "(install: pip install torchao)" in r.stdout
    t = json.loads(out.read_text())["targets"][0]
    assert (t["status"], t["install"], t["operations"]) == ("not run", "pip install torchao", [])


@pytest.fixture(scope="module")
def torchao_report():
    if not HAVE_TORCHAO:
        pytest.skip("torchao is not installed (the not-run report is checked above)")
    import octet.audit
    return octet.audit.run("torchao", mode="quick").to_json()["targets"][0]


def op_named(target, name):
    return next(op for op in target["operations"] if op["name"] == name)


def torchao_to_mx(x, fmt, mode):
    import torch
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.mx_tensor import to_mx
    dt = {"e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[fmt]
    scale, data = to_mx(torch.from_numpy(x), dt, 32, ScaleCalculationMode(mode))
    return data.view(torch.uint8).numpy(), scale.view(torch.uint8).numpy()


def designed_blocks():
    """Blocks of 32 aimed at the known trouble spots: ordinary values, a tiny
    block whose scale is the smallest code 0x00, a block with +inf among
    finite values, the largest FP32 values."""
    rng = np.random.default_rng(1)
    rows = [rng.standard_normal(32) * 10, rng.uniform(-1, 1, 32) * 2.0 ** -125,
            np.concatenate([[np.inf], rng.standard_normal(31) * 100]), rng.uniform(0.5, 1, 32) * 3.4e38]
    return np.array(rows, dtype=np.float32)


@pytest.mark.parametrize("fmt", ["e4m3fn", "e5m2"])
def test_to_mx_floor_is_judged_as_ocp_mx_says(torchao_report, fmt):
    """Re-derives, independently, which of torchao's FLOOR scales and
    elements break OCP MX v1.0 (X = 2^(floor(log2 amax) - emax); elements
    fp8_saturating(x / X)) on designed blocks, and checks the audit
    reports a wrong class exactly where they do."""
    op = op_named(torchao_report, f"to_mx fp32->{fmt} 1x32 FLOOR")
    x = designed_blocks()
    codes, scales = torchao_to_mx(x, fmt, "floor")
    bad_scale, bad_element = [], []
    for r in range(x.shape[0]):
        want = spec.mx_floor_scale(fmt, x[r])
        if int(scales[r, 0]) != want:
            bad_scale.append((r, int(scales[r, 0]), want))
        X = 2.0 ** (int(scales[r, 0]) - 127)
        for v, c in zip(x[r], codes[r]):
            want_c = spec.encode(fmt, float(np.float32(float(v) / X)), True)
            if int(c) != want_c and not (spec.is_nan_code(fmt, int(c)) and spec.is_nan_code(fmt, want_c)):
                bad_element.append((r, float(v), int(c), want_c))
    wrong = [c["class"] for c in op["classes"] if c["verdict"] == "wrong"]
    assert any(w.startswith("scale:") for w in wrong) == bool(bad_scale), (wrong, bad_scale)
    assert any(w.startswith("elements:") for w in wrong) == bool(bad_element), (wrong, bad_element[:3])
    assert (op["verdict"] == "wrong") == bool(bad_scale or bad_element)
    for cls in op["classes"]:
        if cls["verdict"] == "convention difference":  # only NaN may be a convention for FLOOR, a mode Octet has
            assert "NaN" in cls["class"], cls


def test_to_mx_modes_without_a_reference_mode_stay_near_the_floor_scale(torchao_report):
    for fmt in ("e4m3fn", "e5m2"):
        for mode in ("CEIL", "EVEN"):
            op = op_named(torchao_report, f"to_mx fp32->{fmt} 1x32 {mode}")
            for cls in op["classes"]:
                if cls["class"] == "scale: scale rounding mode":
                    for ex in cls["examples"]:
                        assert int(ex["target"].split()[0], 16) - int(ex["reference"].split()[0], 16) in (0, 1), ex


@pytest.mark.parametrize("fmt", ["e4m3fn", "e5m2"])
def test_float8_tensorwise_scale_follows_the_current_scaling_rule(torchao_report, fmt):
    """spec.current_scale (1 for an infinite amax, fp8_max / amax otherwise)
    against torchao's scale of a finite tensor and of one with +inf: the
    audit must report wrong exactly for the tensors where they differ."""
    import torch
    from torchao.float8.float8_scaling_utils import hp_tensor_to_float8_dynamic
    from torchao.float8.float8_training_tensor import LinearMMConfig
    dt = {"e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[fmt]
    op = op_named(torchao_report, f"float8 hp_tensor_to_float8_dynamic fp32->{fmt} tensorwise")
    wrong = {c["class"] for c in op["classes"] if c["verdict"] == "wrong"}
    for kind, x in (("random", np.array([1.5, -3.25, 0.1], np.float32)),
                    ("inf inside block", np.array([np.inf, 2.0, -1.0], np.float32))):
        got = float(hp_tensor_to_float8_dynamic(torch.from_numpy(x), dt, LinearMMConfig())._scale)
        want = spec.current_scale(fmt, x, 1e-12)
        assert (f"scale: {kind}" in wrong) == (got != want and not math.isnan(got)), (kind, got, want, wrong)


def test_the_mx_gemm_is_within_numerics_md_bound(torchao_report):
    gemms = [op for op in torchao_report["operations"] if op["kind"] == "gemm"]
    assert {op["name"].split(" 1x32")[0] for op in gemms} == {"MXTensor mm e4m3fn x e4m3fn", "MXTensor mm e5m2 x e5m2"}
    for op in gemms:
        assert op["verdict"] in ("bit-exact", "within bound"), op
        assert op["details"]["max_ratio_to_bound"] <= 1 and op["counts"]["checked"] > 0
