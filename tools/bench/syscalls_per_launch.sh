#!/usr/bin/env bash
# Counts the system calls the driver makes while launching kernels: runs the
# launch benchmark (100,000 empty-kernel launches on a busy stream, a warm
# stream and a polled stream) under strace -f -c and divides by the number of launches.
# Usage: tools/bench/syscalls_per_launch.sh [build dir, default build/release]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build/release}"
command -v strace >/dev/null || { echo "strace is needed (apt-get install strace)" >&2; exit 1; }
summary="$(mktemp)"
trap 'rm -f "$summary"' EXIT
strace -f -c -o "$summary" "$build/tools/maia-driver-bench" --only launch >/dev/null
launches=100000
total="$(awk '$NF == "total" {print $(NF-2)}' "$summary")"
echo "system calls during $launches launches (all threads, including start-up):"
sed -n '1,12p' "$summary"
awk -v t="$total" -v n="$launches" 'BEGIN {printf "=> %.4f system calls per launch\n", t / n}'
