"""bench_grouped_gemm.py runs end to end on a tiny shape (--quick): its
Octet candidates agree bit for bit and every candidate gets a row."""

import os
import pathlib
import subprocess
import sys

import pytest

import octet

SCRIPT = pathlib.Path(__file__).with_name("bench_grouped_gemm.py")


@pytest.mark.skipif(not any(b["name"] == "cpu" for b in octet.backends()),
                    reason="the cpu backend is not registered (build with -DOCTET_WITH_ONEDNN=ON)")
def test_the_grouped_gemm_benchmark_runs_on_a_tiny_shape():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--experts", "4"], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "# machine class:" in r.stdout
    for row in ("| octet grouped |", "| octet loop |", "| torch bf16 loop |", "| torch fp32 loop |",
                "| torch grouped |"):
        assert row in r.stdout, r.stdout
