"""The command: python -m octet.audit and `octet audit` (the C++ CLI
handing over to it): exit status, JSON report, not-run targets, usage
errors; and that the audit imports no target package until one is run."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "api" / "python"))


def audit(*args, exe=None):
    cmd = [exe, "audit"] if exe else [sys.executable, "-m", "octet.audit"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, env=ENV, timeout=300)


def test_importing_the_audit_imports_no_target_package():
    code = ("import sys, octet, octet.audit; bad = [m for m in ('torch', 'onnx', 'onnxruntime', 'torchao', "
            "'transformer_engine') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr


def test_json_report_follows_the_schema(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "r.json"
    r = audit("torch", "transformer_engine", "--quick", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["schema_version"] == 1 and doc["tool"] == "octet.audit" and doc["mode"] == "quick"
    assert doc["exit_status"] == 0
    torch_t, te = doc["targets"]
    assert te["status"] == "not run" and te["operations"] == []
    assert te["install"] == "pip install transformer_engine[pytorch]" or "CUDA" in te["reason"]
    assert torch_t["status"] == "run"
    for op in torch_t["operations"]:
        assert set(op) >= {"name", "kind", "verdict", "counts", "classes", "details"}
        assert op["verdict"] in ("bit-exact", "within bound", "convention difference", "wrong", "not supported")
        assert set(op["counts"]) == {"checked", "bit_exact", "within_bound", "convention", "wrong"}
        for cls in op["classes"]:
            assert set(cls) == {"verdict", "class", "rule", "count", "examples"}
            assert 1 <= len(cls["examples"]) <= 3
            assert all(set(ex) >= {"input", "target", "reference"} for ex in cls["examples"])
    assert "target torch" in r.stdout and "wrong: none" in r.stdout


def test_usage_errors_name_the_argument():
    r = audit("tensorflow")
    assert r.returncode == 2 and "argument TARGET: invalid choice: 'tensorflow'" in r.stderr
    r = audit("torch", "--quick", "--full")
    assert r.returncode == 2 and "not allowed with argument" in r.stderr
    r = audit("torch", "--device", "tpu")
    assert r.returncode == 2 and "argument --device: invalid choice" in r.stderr


def cli():
    lib = os.environ.get("OCTET_LIBRARY")
    exe = pathlib.Path(lib).resolve().parent.parent / "bin" / "octet" if lib else None
    if exe is None or not exe.is_file():
        pytest.skip("no octet CLI beside OCTET_LIBRARY")
    return str(exe)


def test_the_cli_hands_over_to_python():
    r = audit("--help", exe=cli())
    assert r.returncode == 0 and "usage: octet audit" in r.stdout
    r = audit("tensorflow", exe=cli())
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_the_cli_says_when_python_or_the_package_is_missing(tmp_path):
    exe = cli()
    env = dict(ENV, OCTET_PYTHON=str(tmp_path / "no-python3"))
    r = subprocess.run([exe, "audit", "torch"], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and "cannot run" in r.stderr and "no-python3" in r.stderr
    env = dict(os.environ, PYTHONPATH=str(tmp_path), OCTET_AUDIT_NO_SOURCE_PATH="1")
    if subprocess.run([sys.executable, "-c", "import octet.audit"], env=env, cwd=tmp_path,
                      capture_output=True).returncode == 0:
        pytest.skip("octet is installed for this python3: the package is never missing here")
    r = subprocess.run([exe, "audit", "torch"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 1 and "octet.audit is not importable" in r.stderr, r.stderr
