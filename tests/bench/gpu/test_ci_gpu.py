"""Tests of .ci/gpu that need no GPU: its syntax, its argument handling and
its refusal to guess an architecture without a GPU."""

import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = REPO / ".ci" / "gpu"


def run(args, tmp_path, **env):
    e = dict(os.environ)
    e.update({"OUT": str(tmp_path / "out")})
    e.pop("OCTET_GPU_ARCH", None)
    e.update(env)
    return subprocess.run(["bash", str(SCRIPT)] + args, capture_output=True, text=True, env=e, timeout=120,
                          cwd=tmp_path)


def test_syntax():
    r = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="needs shellcheck (apt-get install shellcheck)")
def test_shellcheck_is_clean():
    r = subprocess.run(["shellcheck", "-S", "info", str(SCRIPT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_help_and_usage_errors(tmp_path):
    r = run(["help"], tmp_path)
    assert r.returncode == 0
    for word in ("env", "build", "test", "validate", "sanitize", "bench", "profile", "all", "OCTET_GPU_ARCH"):
        assert word in r.stdout
    assert run([], tmp_path).returncode == 2
    r = run(["nonsense"], tmp_path)
    assert r.returncode == 2 and "unknown step 'nonsense'" in r.stderr
    r = run(["profile"], tmp_path)
    assert r.returncode == 2 and "profile needs one or more of" in r.stderr
    r = run(["profile", "bogus"], tmp_path)
    assert r.returncode == 2


def test_env_step_writes_the_summary(tmp_path):
    r = run(["env"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert "== environment" in summary and "gpu: env: PASS" in summary
    assert "nvcc:" in summary and "torch:" in summary


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU driver is installed here")
def test_build_without_gpu_or_arch_fails_and_says_how(tmp_path):
    r = run(["build", "env"], tmp_path, OCTET_GPU_BUILD_DIR=str(tmp_path / "never-built"))
    assert r.returncode == 1
    assert "gpu: build: FAIL" in r.stdout and "set OCTET_GPU_ARCH=90a" in r.stdout
    # the next step still ran, and the last line names the failure
    assert "gpu: env: PASS" in r.stdout
    assert r.stdout.strip().splitlines()[-1].startswith("gpu: FAILED steps: build")
    assert not (tmp_path / "never-built").exists()


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU driver is installed here")
def test_gpu_steps_without_gpu_fail_clearly(tmp_path):
    # a fake build folder with the two files ensure_built looks for, so that
    # no build starts: validate and bench must then refuse for want of a GPU
    b = tmp_path / "b"
    (b / "lib" / "octet" / "backends").mkdir(parents=True)
    (b / "lib" / "liboctet.so").write_text("")
    (b / "lib" / "octet" / "backends" / "liboctet_backend_cuda.so").write_text("")
    r = run(["validate", "bench"], tmp_path, OCTET_GPU_BUILD_DIR=str(b))
    assert r.returncode == 1
    assert "gpu: validate: FAIL" in r.stdout and "gpu: bench: FAIL" in r.stdout
    assert r.stdout.count("no GPU here") == 2
