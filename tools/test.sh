#!/usr/bin/env bash
# Runs the whole maia test suite (setting everything up first) through ctest.
# Usage: tools/test.sh [--config release|debug] [--sanitize address|thread] [ctest args...]
#   --sanitize address  AddressSanitizer + UndefinedBehaviorSanitizer build (build/asan)
#   --sanitize thread   ThreadSanitizer build (build/tsan)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

config=release
ctest_args=()
while (($#)); do
  case "$1" in
    --config) config="$2"; shift 2 ;;
    --config=*) config="${1#*=}"; shift ;;
    --sanitize) config="$([[ $2 == address ]] && echo asan || echo "${2:0:1}san")"; shift 2 ;;
    --sanitize=*) v="${1#*=}"; config="$([[ $v == address ]] && echo asan || echo "${v:0:1}san")"; shift ;;
    *) ctest_args+=("$1"); shift ;;
  esac
done
case "$config" in
  release|debug|asan|tsan) ;;
  *) die "unknown configuration '$config' (release, debug, --sanitize address|thread)" ;;
esac

"$MAIA_ROOT/tools/setup.sh" --no-build
maia_build "$config"
export PATH="$MAIA_VENV/bin:$PATH"
cd "$(maia_build_dir "$config")"
exec ctest --output-on-failure --timeout 600 -j"$(nproc)" "${ctest_args[@]}"
