"""The Python code the documentation shows runs as it stands: the tour that
opens docs/python.md (its first ```python block), the first program of
docs/pytorch.md and the README's snippet (the `python3 -c '...'` of "From
Python")."""

import contextlib
import io
import pathlib
import re

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def _run(code, name):
    out = io.StringIO()
    namespace = {"__name__": "__docs__"}
    with contextlib.redirect_stdout(out):
        exec(compile(code, name, "exec"), namespace)  # noqa: S102 (our own documentation)
    return out.getvalue(), namespace


def test_the_tour_opens_docs_python_md_and_runs():
    text = (REPO / "docs" / "python.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)
    assert blocks, "docs/python.md has no ```python block"
    tour = blocks[0]
    assert text.index("```python") < text.index("\n## "), "the tour must come before the first section"
    assert len(tour.strip().splitlines()) <= 25, "the tour is meant to be about 20 lines"
    printed, ns = _run(tour, "docs/python.md (tour)")
    lines = printed.splitlines()
    assert len(lines) == 4, printed
    assert lines[0].startswith(ns["octet"].__version__)
    assert ns["y"].shape == (64, 16) and ns["out"].shape == (64, 16) and ns["dx"].shape == (64, 32)
    assert np.isfinite(ns["out"]).all() and np.isfinite(ns["dx"]).all()
    amax = np.abs(ns["x"].astype(np.float32)).max()
    assert 0 < float(lines[2]) <= amax * 2.0**-4 * (1 + 2.0**-20)  # E4M3 rounds within half a step (2^-4 relative)


def test_the_readme_python_snippet_runs():
    text = (REPO / "README.md").read_text()
    m = re.search(r"PYTHONPATH=api/python python3 -c '\n(.*?)\n    '\n", text, flags=re.S)
    assert m, "README.md's python3 -c snippet not found"
    code = "\n".join(line[4:] for line in m.group(1).splitlines())
    printed, _ = _run(code, "README.md (From Python)")
    assert printed.strip() == "(64, 16)"


def test_the_first_program_of_docs_pytorch_md_runs(tmp_path):
    pytest.importorskip("torch")
    text = (REPO / "docs" / "pytorch.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)
    assert blocks and text.index("```python") < text.index("\n## "), "docs/pytorch.md must open with its example"
    code = blocks[0].replace('"/tmp/octet_mlp.pt"', repr(str(tmp_path / "octet_mlp.pt")))
    printed, ns = _run(code, "docs/pytorch.md (first program)")
    loss = float(re.fullmatch(r"loss ([0-9.]+)\n", printed).group(1))
    assert 0 < loss < 1.5
    state = ns["torch"].load(tmp_path / "octet_mlp.pt", weights_only=True)
    assert "2.weight" in state and not any(k.endswith("_extra_state") for k in state)
    assert "octet_quantizers" in state._metadata["0"]  # the FP8 scaling state travels as metadata
