#!/usr/bin/env python3
"""The ABI gate (abi/gate.py, .ci/abi) fails on incompatible changes and
passes compatible ones. Each case edits a scratch copy of the public headers
(or builds a scratch liboctet) and runs the gate against the committed
baselines in abi/.

  abi_gate_test.py REPO LIBOCTET    (exit 77, skipped, without abigail-tools)
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

REPO, LIBRARY = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()
GATE = REPO / "abi" / "gate.py"

# (what, header, text, replacement): each must make the gate fail.
INCOMPATIBLE = [
    ("an enumeration constant's value", "octet_types.h", "OCTET_DTYPE_E8M0 = 14", "OCTET_DTYPE_E8M0 = 15"),
    ("a removed enumeration constant", "octet.h", ", OCTET_ROLE_GRADIENT = 2 }", " }"),
    ("a field inserted mid-struct (users' ABI)", "octet.h", "  int32_t trans_b;         /*",
     "  int32_t inserted;\n  int32_t trans_b;         /*"),
    ("a field's type, same size (plugin ABI)", "octet_backend.h", "  int32_t trans_b;\n", "  float trans_b;\n"),
    ("an entry's parameter type (plugin ABI)", "octet_backend.h",
     "int32_t (*gemm)(octet_backend_context* context, const octet_gemm_args* args);",
     "int32_t (*gemm)(octet_backend_context* context, const octet_gemm_args* args, int32_t extra);"),
    ("a function's parameter type (users' ABI)", "octet.h",
     "OCTET_API octet_status octet_layer_new_step(octet_layer* layer);",
     "OCTET_API octet_status octet_layer_new_step(const octet_layer* layer, int32_t step);"),
    ("a removed function (users' ABI)", "octet.h", "OCTET_API void octet_saved_destroy(octet_saved* saved);", ""),
    ("a new plugin ABI major", "octet_backend.h", "#define OCTET_PLUGIN_ABI_MAJOR 1",
     "#define OCTET_PLUGIN_ABI_MAJOR 2"),
]
# Each must pass the check.
COMPATIBLE = [
    ("a new enumeration constant", "octet_types.h", "OCTET_DTYPE_E2M1 = 17      /*",
     "OCTET_DTYPE_E2M1 = 17, OCTET_DTYPE_NEW = 20 /*"),
    ("a new function", "octet.h", "OCTET_API void octet_saved_destroy(octet_saved* saved);",
     "OCTET_API void octet_saved_destroy(octet_saved* saved);\nOCTET_API octet_status octet_added(size_t n);"),
    ("a new minor version", "octet_backend.h", "#define OCTET_PLUGIN_ABI_MINOR 5", "#define OCTET_PLUGIN_ABI_MINOR 6"),
]
# A struct grown at its end: the check fails (the baseline holds the old
# layout) and `update` accepts it as a minor change; a field placed in the
# old tail padding is refused.
APPENDED = ("octet_backend.h", "  float* d_amax_out;              /* device, 1 value, or NULL */\n} octet_gemm_args;",
            "  float* d_amax_out;              /* device, 1 value, or NULL */\n  int64_t appended;\n} octet_gemm_args;")
INTO_PADDING = ("octet.h", "  float amax;\n} octet_quantize_stats;",
                "  float amax;\n  float in_padding;\n} octet_quantize_stats;")


def gate(mode, include, library=LIBRARY, baselines=None, extra=()):
    cmd = [sys.executable, str(GATE), mode, "--library", str(library), "--include", str(include)]
    if baselines:
        cmd += ["--baselines", str(baselines)]
    return subprocess.run(cmd + list(extra), capture_output=True, text=True)


def edited(work, header, old, new):
    include = work / "include"
    shutil.rmtree(include, ignore_errors=True)
    shutil.copytree(REPO / "api" / "include", include)
    path = include / "octet" / header
    text = path.read_text()
    assert text.count(old) == 1, f"{header} no longer holds {old!r} once"
    path.write_text(text.replace(old, new))
    return include


def liboctet_without(work, missing):
    """A liboctet with the baseline's octet_* symbols but `missing`."""
    names = re.findall(r"<elf-symbol name='(octet_\w+)'", (REPO / "abi" / "liboctet.abi").read_text())
    assert missing in names
    source = work / "fake.c"
    source.write_text("".join(f"void {n}(void) {{}}\n" for n in names if n != missing))
    lib = work / "liboctet.so.0.1.0"
    cc = os.environ.get("CC") or "cc"
    subprocess.run([cc, "-shared", "-fPIC", "-Wl,-soname,liboctet.so.1", str(source), "-o", str(lib)], check=True)
    return lib


def main():
    if not all(shutil.which(t) for t in ("abidw", "abidiff", "objcopy")):
        print("SKIPPED: abidw/abidiff not found (install abigail-tools)")
        return 77
    failures = []
    work = pathlib.Path(tempfile.mkdtemp(prefix="octet-abi-gate-test-"))
    try:
        r = gate("check", REPO / "api" / "include")
        if r.returncode != 0:
            failures.append(f"the repository's headers and {LIBRARY} fail the gate:\n{r.stderr}")
        for what, header, old, new in INCOMPATIBLE:
            r = gate("check", edited(work, header, old, new))
            print(f"{'ok  ' if r.returncode == 1 else 'FAIL'} incompatible: {what}")
            if r.returncode != 1:
                failures.append(f"{what}: the gate passed (exit {r.returncode}) {r.stderr}")
        for what, header, old, new in COMPATIBLE:
            r = gate("check", edited(work, header, old, new))
            print(f"{'ok  ' if r.returncode == 0 else 'FAIL'} compatible: {what}")
            if r.returncode != 0:
                failures.append(f"{what}: the gate failed:\n{r.stderr}")
        lib = liboctet_without(work, "octet_amax")
        r = gate("check", REPO / "api" / "include", library=lib)
        print(f"{'ok  ' if r.returncode == 1 else 'FAIL'} incompatible: a symbol liboctet no longer exports")
        if r.returncode != 1 or "octet_amax" not in r.stderr:
            failures.append(f"a removed liboctet symbol: exit {r.returncode} {r.stderr}")

        baselines = work / "baselines"
        shutil.copytree(REPO / "abi", baselines)
        include = edited(work, *APPENDED)
        checks = [("check of an appended field fails", gate("check", include), 1),
                  ("update accepts it as a minor change", gate("update", include, baselines=baselines), 0),
                  ("then the check passes", gate("check", include, baselines=baselines), 0)]
        include = edited(work, "octet_types.h", "OCTET_DTYPE_E8M0 = 14", "OCTET_DTYPE_E8M0 = 15")
        checks.append(("update refuses a changed constant", gate("update", include, baselines=baselines), 1))
        include = edited(work, *INTO_PADDING)
        checks += [("update refuses a field in the old tail padding",
                    gate("update", include, baselines=baselines), 1),
                   ("update --major takes it", gate("update", include, baselines=baselines, extra=["--major"]), 0)]
        for what, r, want in checks:
            print(f"{'ok  ' if r.returncode == want else 'FAIL'} {what}")
            if r.returncode != want:
                failures.append(f"{what}: exit {r.returncode}, expected {want}:\n{r.stdout}{r.stderr}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("FAILED:\n" + "\n".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
