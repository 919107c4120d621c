#!/bin/sh
# skip_unless_cuda.sh <bp-info> <command> [args...]: runs the command when bp-info lists
# a cuda device; otherwise prints "skipped: <why>" and exits 77, which CTest reports as
# skipped (SKIP_RETURN_CODE), never as passed. In a cross build BP_TEST_EMULATOR (e.g.
# qemu-aarch64) runs bp-info.
info="$1"
shift
# Unquoted: the emulator's words (none natively).
out=$(${BP_TEST_EMULATOR:-} "$info" 2>&1) || { echo "skipped: bp-info failed: $out"; exit 77; }
if ! printf '%s\n' "$out" | grep -q '^  cuda:0 '; then
    why=$(printf '%s\n' "$out" | awk '/^  cuda /{c=1; next} c && /no devices: /{sub(/^ *no devices: /, ""); print; exit} /^  [a-z]/{c=0}')
    echo "skipped: no CUDA device${why:+: $why}"
    exit 77
fi
exec "$@"
