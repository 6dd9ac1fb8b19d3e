#!/usr/bin/env bash
# Backends, the reference and the template plugin are written against the
# plugin ABI (octet_backend.h, octet_types.h, octet_math.h) only: none of
# their files includes octet.h, and none names a recipe or layer constant.
set -euo pipefail
root=$1
cd "$root"
dirs=(backends reference plugins/template)
status=0
if grep -rnE '#\s*include\s*[<"](octet/)?octet(_dlpack)?\.h[>"]' "${dirs[@]}"; then
  echo "FAILED: the files above include the users' ABI (octet.h); include <octet/octet_backend.h>" >&2
  status=1
fi
if grep -rnwE 'OCTET_(AMAX|RECIPE|ROLE|FORMAT|LAYER|WEIGHTS|FEATURE)_[A-Z_0-9]+' "${dirs[@]}" \
     --include='*.c' --include='*.h' --include='*.cpp' --include='*.hpp' --include='*.cu' --include='*.cuh'; then
  echo "FAILED: the files above name users' ABI constants; the plugin ABI has its own" >&2
  status=1
fi
[ $status -eq 0 ] && echo "backends, reference and template see the plugin ABI only"
exit $status
