# shellcheck shell=bash
# CI phase accounting, sourced by .ci/test, .ci/sanitize, .ci/fuzz and
# .ci/wheel (not run). Each `phase NAME COMMAND...` runs COMMAND with its
# output shown and kept in $OCTET_CI_LOGS/NAME.log, and appends one record to
# $OCTET_CI_PHASES: the name, the wall time in seconds, the tests it ran and
# its exit status. `phase_table` prints the records as the table that ends
# every CI run (CONTRIBUTING.md, "CI time").
#
# The tests a phase ran are counted from what the runners print, summed:
# ctest's "... out of N", pytest's "N passed" (and failed, skipped, errors),
# cargo's "test result: ok. N passed; M failed", GoogleTest's "[==========] N tests ... ran." and libFuzzer's
# "stat::number_of_executed_units: N" (counted apart, as fuzz inputs).

: "${OCTET_CI_PHASES:=build/ci-phases.tsv}"
: "${OCTET_CI_LOGS:=build/ci-logs}"
export OCTET_CI_PHASES OCTET_CI_LOGS

# Counts the tests in log $1: "<tests> <fuzz inputs>".
phase_count() {
  awk '
    /tests passed, [0-9]+ tests failed out of [0-9]+/ { tests += $NF; next }
    /^\[==========\] [0-9]+ tests? from [0-9]+ test (suite|case)s? ran/ { tests += $2; next }
    /^(=+ )?[0-9]+ (passed|failed|skipped|error|errors)(,| |$)/ || /^=+ .*[0-9]+ (passed|failed|skipped).* in [0-9.]+s/ {
      for (i = 1; i <= NF; ++i) if ($(i + 1) ~ /^(passed|failed|skipped|errors?),?$/ && $i ~ /^[0-9]+$/) tests += $i
      next
    }
    /^test result: / {  # cargo test
      for (i = 1; i < NF; ++i) if ($(i + 1) ~ /^(passed|failed);$/ && $i ~ /^[0-9]+$/) tests += $i
      next
    }
    /^stat::number_of_executed_units: [0-9]+/ { inputs += $2 }
    END { printf "%d %d\n", tests, inputs }' "$1"
}

# phase NAME COMMAND...: runs COMMAND, records it, returns its status.
phase() {
  local name=$1
  shift
  mkdir -p "$OCTET_CI_LOGS" "$(dirname "$OCTET_CI_PHASES")"
  local log="$OCTET_CI_LOGS/$name.log" start=$SECONDS status=0
  echo "=== phase $name: $*"
  # pipefail (set by every caller) makes the pipeline's status COMMAND's.
  "$@" 2>&1 | tee "$log" || status=$?
  local counts
  counts=$(phase_count "$log")
  printf '%s\t%d\t%s\t%s\t%d\n' "$name" "$((SECONDS - start))" "${counts% *}" "${counts#* }" "$status" \
    >>"$OCTET_CI_PHASES"
  return "$status"
}

# Prints the recorded phases: name, wall time, tests, fuzz inputs, result;
# and the total.
phase_table() {
  [ -s "$OCTET_CI_PHASES" ] || return 0
  echo
  echo "CI phases (wall time; tests counted from the runners' summaries; budget 35 min, CONTRIBUTING.md):"
  awk -F'\t' '
    BEGIN { printf "  %-22s %9s %7s %12s  %s\n", "phase", "wall", "tests", "fuzz inputs", "result" }
    {
      printf "  %-22s %6d:%02d %7d %12s  %s\n", $1, $2 / 60, $2 % 60, $3, ($4 > 0 ? $4 : "-"),
        ($5 == 0 ? "ok" : "FAILED (" $5 ")")
      wall += $2; tests += $3; inputs += $4
    }
    END {
      printf "  %-22s %6d:%02d %7d %12s\n", "total", wall / 60, wall % 60, tests, (inputs > 0 ? inputs : "-")
      if (wall > 35 * 60) printf "  OVER BUDGET: %d s of the 2100 s budget (hard limit 5400 s)\n", wall
    }' "$OCTET_CI_PHASES"
}
