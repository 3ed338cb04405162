# Shared by the tools/*.sh entry points: paths, logging, build configs.
# shellcheck shell=bash
MAIA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MAIA_VENV="$MAIA_ROOT/.venv"

log() { printf '[maia] %s\n' "$*" >&2; }
die() { printf '[maia] error: %s\n' "$*" >&2; exit 1; }

# Build configurations (CMakePresets.json): release, debug, asan, tsan.
maia_build_dir() { echo "$MAIA_ROOT/build/$1"; }

# maia_build CONFIG: configures (once) and builds CONFIG incrementally.
maia_build() {
  local config="$1" dir
  dir="$(maia_build_dir "$config")"
  if [[ ! -f "$dir/build.ninja" ]]; then
    log "configuring the '$config' build in build/$config"
    cmake --preset "$config" -S "$MAIA_ROOT" >/dev/null
  fi
  log "building '$config'"
  local status=0
  cmake --build "$dir" -- -j"$(nproc)" >"$dir/last-build.log" 2>&1 || status=$?
  # Show diagnostics, not progress lines.
  grep -v -e '^\[[0-9]*/[0-9]*\]' -e '^ninja: no work to do' "$dir/last-build.log" || true
  ((status == 0)) || die "the '$config' build failed (log: build/$config/last-build.log)"
}
