#!/usr/bin/env python3
"""Runs `octet demo` as a user does and checks what it prints and writes.

usage: check_demo.py OCTET_BINARY BACKEND [DEMO ARGS ...]

Checks: exit status 0; one table row per precision, each either numbers or
"unsupported: <message>"; the gap column recomputed here from the final
losses; FP8 delayed and current within 5% of FP32; the printed plot path
exists and is well-formed SVG with one curve and one legend entry per
precision that ran. Exit 77 (ctest: skipped) when BACKEND is not registered
or cannot run the layers (the FP32 row is unsupported), saying why.
"""
import os
import re
import subprocess
import sys
import tempfile
import xml.dom.minidom

SKIP = 77
PRECISIONS = ["fp32", "bf16", "fp8-delayed", "fp8-current", "fp8-static", "fp8-mxfp8", "fp8-block", "fp8-rowwise",
              "nvfp4"]
MUST_RUN = ["fp32", "bf16", "fp8-delayed", "fp8-current", "fp8-static"]  # per-tensor: layers take them


def fail(message):
    print("check_demo: FAIL: " + message)
    sys.exit(1)


def main():
    octet, backend, extra = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3:]
    info = subprocess.run([octet, "info"], capture_output=True, text=True)
    if not re.search(r"^backend \d+: %s$" % re.escape(backend), info.stdout, re.M):
        print("check_demo: backend '%s' is not registered here: skipped" % backend)
        return SKIP

    workdir = tempfile.mkdtemp(prefix="octet-demo-test-")
    plot = os.path.join(workdir, "loss.svg")
    cmd = [octet, "demo", "--backend", backend, "--plot", plot] + extra
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)
    print("$ " + " ".join(cmd))
    print(run.stdout)
    print(run.stderr)

    rows = {}
    for line in run.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] in PRECISIONS:
            rows[parts[0]] = line
    if "fp32" in rows and "unsupported:" in rows["fp32"] and backend != "reference":
        print("check_demo: backend '%s' cannot run the layers (%s): skipped"
              % (backend, rows["fp32"].split("unsupported:", 1)[1].strip()))
        return SKIP

    if run.returncode != 0:
        fail("exit status %d" % run.returncode)
    for p in PRECISIONS:
        if p not in rows:
            fail("no table row for " + p)

    number = r"([0-9.]+)"
    finals = {}
    for p in PRECISIONS:
        line = rows[p]
        if re.match(r"^%s\s+unsupported: \S" % re.escape(p), line):
            if p in MUST_RUN:
                fail(p + " must run on the layers, got: " + line)
            continue
        m = re.match(r"^%s\s+%s\s+(\S+)\s+%s(\s+%s){5}" % (re.escape(p), number, number, number), line)
        if not m:
            fail("malformed row: " + line)
        finals[p] = float(m.group(1))
        if not (finals[p] > 0):
            fail("non-positive final loss: " + line)
        gap_text = m.group(2)
        if p == "fp32":
            if gap_text != "-":
                fail("fp32's gap column should be '-': " + line)
            continue
        gm = re.match(r"^([+-][0-9.]+)%$", gap_text)
        if not gm:
            fail("bad gap column: " + line)
        expected = 100.0 * (finals[p] - finals["fp32"]) / finals["fp32"]
        # The table rounds losses to 5 decimals and gaps to 2.
        if abs(float(gm.group(1)) - expected) > 0.05 + 100.0 * 1e-5 / finals["fp32"]:
            fail("%s gap %s%% but the losses give %.3f%%" % (p, gm.group(1), expected))
        if p in ("fp8-delayed", "fp8-current") and expected > 5.0:
            fail("%s ended %.2f%% above fp32 but the demo passed" % (p, expected))
    if "PASS" not in run.stdout:
        fail("no PASS line")

    m = re.search(r"^loss curves: (.+)$", run.stdout, re.M)
    if not m or os.path.abspath(os.path.join(workdir, m.group(1))) != os.path.abspath(plot):
        fail("the plot path is not printed")
    doc = xml.dom.minidom.parse(plot)  # raises on malformed XML
    svg = doc.documentElement
    if svg.tagName != "svg" or svg.getAttribute("xmlns") != "http://www.w3.org/2000/svg":
        fail("the plot is not an SVG document")
    lines = svg.getElementsByTagName("polyline")
    if len(lines) < len(finals):
        fail("%d curves for %d precisions" % (len(lines), len(finals)))
    texts = [t.firstChild.data for t in svg.getElementsByTagName("text") if t.firstChild]
    for p in finals:
        if p not in texts:
            fail("no legend entry for " + p)
    for p in PRECISIONS:
        if p not in finals and p in texts:
            fail("legend entry for %s, which did not run" % p)
    print("check_demo: PASS (%d precisions ran, %d unsupported)"
          % (len(finals), len(PRECISIONS) - len(finals)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
