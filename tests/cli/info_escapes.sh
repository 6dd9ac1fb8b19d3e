#!/usr/bin/env bash
# `octet info` on a plugin folder holding a file whose name carries a newline
# and a forged "backend" line, and a FIFO named like a plugin: the name is
# printed escaped (no forged line), and the FIFO is reported as skipped.
# usage: info_escapes.sh EXPECT_CLI OCTET
set -u
expect=$1
octet=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf 'not a library' > "$dir/liboctet_backend_x
backend 9: forged.so"
mkfifo "$dir/liboctet_backend_fifo.so"
OCTET_BACKEND_PATH=$dir bash "$expect" 0 \
  '+liboctet_backend_x\\nbackend 9: forged\.so' \
  '-^backend 9: forged' \
  '+liboctet_backend_fifo\.so: skipped: a FIFO \(named pipe\), not a regular file' \
  -- "$octet" info
