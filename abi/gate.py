#!/usr/bin/env python3
"""The ABI gate: abidiff of Octet's two ABIs against the baselines in abi/
(docs/abi.md, "The ABI gate").

  gate.py check  --library LIB [--include DIR] [--baselines DIR]
      Fails (exit 1, abidiff's report on stderr) on any change to what a
      baseline holds: a removed or changed function or symbol, a changed
      struct layout or field type, a changed or removed constant. Added
      functions, symbols, structs and enumerations pass.
  gate.py update --library LIB [...] [--major]
      Rewrites the baselines. Without --major it first checks that the
      change is a minor one: additions only, where a struct may also grow
      by fields appended past its old size (never into its tail padding).

Baselines (abidw XML, no source locations or paths):
  liboctet.abi  the octet_* symbols liboctet exports and its soname (its ELF
                symbol table, with the debug info stripped, so any build type
                gives the same file);
  users.abi     the users' ABI as octet.h, octet_dlpack.h and octet_types.h
                declare it: every function's signature, struct layout and
                constant, through a probe library (abi/probe.py);
  plugin.abi    the plugin ABI as octet_backend.h and octet_types.h declare
                it, through the same kind of probe.
Tools: abidw and abidiff (Debian's abigail-tools), a C compiler (CC, else
cc) and objcopy (binutils).
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True
import probe  # noqa: E402

ABIDW = ["abidw", "--no-corpus-path", "--no-comp-dir-path", "--no-show-locs"]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"abi gate: {' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def current_abis(library, include, work):
    """{name: abidw XML text} of the build and headers given."""
    cc = os.environ.get("CC") or "cc"
    out = {}
    for abi in ("users", "plugin"):
        source = work / f"octet_abi_probe_{abi}.c"
        source.write_text(probe.probe_source(abi, include))
        lib = work / f"liboctet_abi_probe_{abi}.so"
        run([cc, "-std=gnu11", "-g", "-O0", "-shared", "-fPIC", "-fvisibility=hidden", f"-I{include}",
             source.name, "-o", lib.name], cwd=work)
        out[abi] = run(ABIDW + [str(lib)])
    stripped = work / "liboctet.so"
    run(["objcopy", "--strip-debug", str(library), str(stripped)])
    out["liboctet"] = octet_symbols_only(run(ABIDW + [str(stripped)]))
    return out


def octet_symbols_only(xml):
    """abidw's ELF-only corpus without what is not Octet's: the weak template
    instantiations of the C++ standard library and Boost that any shared
    library exports (they come and go with the implementation) and the
    libraries it needs."""
    xml = re.sub(r"\n\s*<elf-needed>.*?</elf-needed>", "", xml, flags=re.S)
    return "".join(line for line in xml.splitlines(keepends=True)
                   if "<elf-symbol " not in line or "<elf-symbol name='octet_" in line)


def abidiff(baseline, current, work, name):
    """(exit status, report) of abidiff baseline -> current; added symbols
    and added enumerators are not changes."""
    old, new = work / f"{name}.baseline.abi", work / f"{name}.current.abi"
    old.write_text(baseline)
    new.write_text(current)
    r = subprocess.run(["abidiff", "--no-added-syms", str(old), str(new)], capture_output=True, text=True)
    if r.returncode & 3:  # 1: error, 2: usage error
        sys.exit(f"abi gate: abidiff could not compare {name}:\n{r.stdout}{r.stderr}")
    return r.returncode, r.stdout


# A minor change as abidiff reports it: summaries with nothing removed, the
# path down to a struct, and that struct growing by members appended past its
# old size. Anything else (a member changed, moved or removed, a type that
# changed, an enumerator's value) is not in this list, and refuses the update.
# A "(N filtered)" count is part of a path line: abidiff leaves out there a
# change it reports elsewhere (a struct reached through two paths).
_PATH = re.compile(r"(\d+ functions? with some indirect sub-type changes?:"
                   r"|\[C\] '.*' has some indirect sub-type changes:"
                   r"|parameter \d+ of type '.*' has sub-type changes:"
                   r"|in pointed to type '.*':"
                   r"|in unqualified underlying type '.*':"
                   r"|underlying type '.*' changed:"
                   r"|type of '.*' changed:"
                   r"|type size hasn't changed"
                   r"|\d+ data member changes?( \(\d+ filtered\))?:"
                   r"|\d+ data member insertions?:)$")
_SUMMARY = re.compile(r"(Functions|Variables) changes summary: 0 Removed, \d+ Changed.*, \d+ Added.*"
                      r"|(Function|Variable) symbols changes summary: 0 Removed, .*")
_GROWS = re.compile(r"type size changed from (\d+) to (\d+) \(in bits\)")
_APPENDED = re.compile(r"'.*', at offset (\d+) \(in bits\)")


def minor_change_problems(report):
    """Lines of an abidiff report that are not a minor change."""
    problems, old_size = [], None
    for line in (raw.strip() for raw in report.splitlines()):
        if not line or _SUMMARY.fullmatch(line) or _PATH.fullmatch(line):
            continue
        m = _GROWS.fullmatch(line)
        if m and int(m.group(2)) > int(m.group(1)):
            old_size = int(m.group(1))
            continue
        m = _APPENDED.fullmatch(line)
        if m and old_size is not None and int(m.group(1)) >= old_size:
            continue
        problems.append(line)
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["check", "update"])
    parser.add_argument("--library", required=True, type=pathlib.Path, help="the built liboctet.so")
    parser.add_argument("--include", type=pathlib.Path, default=HERE.parent / "api" / "include")
    parser.add_argument("--baselines", type=pathlib.Path, default=HERE)
    parser.add_argument("--major", action="store_true", help="update: accept an incompatible change")
    args = parser.parse_args()
    for tool in ("abidw", "abidiff", "objcopy"):
        if shutil.which(tool) is None:
            sys.exit(f"abi gate: {tool} not found: install abigail-tools and binutils")
    if not args.library.is_file():
        sys.exit(f"abi gate: --library {args.library}: no such file (build liboctet first)")

    work = pathlib.Path(tempfile.mkdtemp(prefix="octet-abi-"))
    try:
        current = current_abis(args.library.resolve(), args.include.resolve(), work)
        failures = []
        for name, xml in current.items():
            path = args.baselines / f"{name}.abi"
            if not path.is_file():
                failures.append((name, f"no baseline {path}", []))
                continue
            status, report = abidiff(path.read_text(), xml, work, name)
            if status:
                failures.append((name, report, minor_change_problems(report)))
        if args.mode == "check":
            for name, report, _ in failures:
                print(f"abi gate: {name}: incompatible with the baseline abi/{name}.abi:\n{report}", file=sys.stderr)
            if failures:
                print("abi gate: FAILED. An intended minor change (additions only): "
                      "bash .ci/abi --update; a major one: bash .ci/abi --update --major "
                      "(docs/abi.md, \"The ABI gate\")", file=sys.stderr)
                return 1
            print(f"abi gate: liboctet, users' ABI and plugin ABI match the baselines in {args.baselines}")
            return 0
        refused = [(n, p) for n, _, p in failures if p]
        if refused and not args.major:
            for name, problems in refused:
                print(f"abi gate: {name}: not a minor change:\n  " + "\n  ".join(problems), file=sys.stderr)
            print("abi gate: baselines NOT updated; a deliberate major change needs --major", file=sys.stderr)
            return 1
        for name, xml in current.items():
            (args.baselines / f"{name}.abi").write_text(xml)
        print(f"abi gate: baselines written to {args.baselines}")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
