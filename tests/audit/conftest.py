"""Shared fixtures: the audit's quick reports of torch and onnxruntime,
each run once per session."""

import pytest


@pytest.fixture(scope="session")
def torch_report():
    pytest.importorskip("torch")
    import octet.audit
    return octet.audit.run("torch", mode="quick")


@pytest.fixture(scope="session")
def ort_report():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    import octet.audit
    return octet.audit.run("onnxruntime", mode="quick")
