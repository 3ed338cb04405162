#!/usr/bin/env bash
# run-sanitized.sh LOG_DIR NAME COMMAND...: runs COMMAND with the sanitizer
# reports of it and of its child processes written to LOG_DIR/NAME.<tool>.<pid>
# (log_path), then prints them and fails if there is any. The children matter:
# the Inductor plugin runs maia-compile --server with its stderr discarded.
# The environment (LD_PRELOAD, *SAN_OPTIONS) comes from cmake/MaiaSanitizers.cmake.
set -uo pipefail
dir="$1" name="$2"
shift 2
mkdir -p "$dir"
rm -f "$dir/$name".*
for tool in asan ubsan tsan; do
  var="${tool^^}_OPTIONS"
  if [[ -n "${!var:-}" ]]; then export "$var=${!var}:log_path=$dir/$name.$tool"; fi
done
"$@"
status=$?
shopt -s nullglob
reports=("$dir/$name".*)
for report in "${reports[@]}"; do
  printf '==== sanitizer report %s\n' "$report"
  cat "$report"
done
if ((${#reports[@]} && status == 0)); then status=1; fi
exit "$status"
