#!/usr/bin/env bash
# The C example in README.md must be docs/examples/quickstart.c (from its
# first #include on), which the c_abi suite builds and runs.
set -euo pipefail
root=$1
diff <(sed -n '/^```c$/,/^```$/p' "$root/README.md" | sed '1d;$d') \
     <(sed -n '/^#include <octet\/octet.h>/,$p' "$root/docs/examples/quickstart.c")
echo "README example matches docs/examples/quickstart.c"
