#!/usr/bin/env bash
# Runs a command and checks its exit status and its output (stdout+stderr).
# usage: expect_cli.sh EXIT [+REGEX ...] [-REGEX ...] -- COMMAND [ARGS ...]
#   +REGEX  must match some line (grep -E)     -REGEX  must match no line
set -u
expected_exit=$1
shift
must=()
must_not=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    +*) must+=("${1#+}") ;;
    -*) must_not+=("${1#-}") ;;
    *) echo "expect_cli.sh: bad pattern '$1' (start it with + or -)"; exit 2 ;;
  esac
  shift
done
[ $# -gt 0 ] && shift  # the "--"

output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
ok=1
if [ "$status" -ne "$expected_exit" ]; then
  echo "expect_cli.sh: exit status $status, expected $expected_exit"
  ok=0
fi
for re in "${must[@]+"${must[@]}"}"; do
  if ! printf '%s\n' "$output" | grep -Eq -- "$re"; then
    echo "expect_cli.sh: no line matches '$re'"
    ok=0
  fi
done
for re in "${must_not[@]+"${must_not[@]}"}"; do
  if printf '%s\n' "$output" | grep -Eq -- "$re"; then
    echo "expect_cli.sh: a line matches '$re', which must not appear"
    ok=0
  fi
done
[ $ok -eq 1 ]
