"""The `octet` console command of the installed package (pyproject.toml).

Runs the CLI binary bundled in the package (octet/bin/octet, linked to the
bundled liboctet through its RPATH) with the same arguments; its exit status
is the command's. From a build tree (OCTET_LIBRARY=build/lib/liboctet.so
PYTHONPATH=api/python python3 -m octet ...) it runs the binary beside that
library (build/bin/octet)."""

import os
import pathlib
import subprocess
import sys


def _binary():
    candidates = [pathlib.Path(__file__).resolve().parent / "bin" / "octet"]
    explicit = os.environ.get("OCTET_LIBRARY")
    if explicit:
        candidates.append(pathlib.Path(explicit).resolve().parent.parent / "bin" / "octet")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def main():
    exe = _binary()
    if exe is None:
        sys.stderr.write("octet: the command-line binary is not bundled with this package "
                         "(build the octet_cli CMake target, or pip install Octet's source tree)\n")
        return 1
    args = [exe] + sys.argv[1:]
    if os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(exe, args)  # does not return: the binary's exit status is ours
    return subprocess.call(args)


if __name__ == "__main__":
    sys.exit(main())
