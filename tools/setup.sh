#!/usr/bin/env bash
# Sets up a fresh machine for maia, and does nothing that is already done:
#   1. Debian packages of tools/debian-packages.txt (pinned patterns),
#   2. the Python environment .venv from tools/requirements.txt,
#   3. the release build (incremental).
# Usage: tools/setup.sh [--no-build]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

build=1
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    *) die "unknown option '$arg' (usage: tools/setup.sh [--no-build])" ;;
  esac
done

install_debian_packages() {
  local missing=() line name pattern installed
  while read -r line; do
    [[ -z "$line" || "$line" == \#* ]] && continue
    name="${line%%=*}"
    pattern="${line#*=}"
    installed="$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$name" 2>/dev/null || true)"
    # shellcheck disable=SC2053  # the pattern is a glob on purpose
    if [[ "$installed" != ii* || "${installed:3}" != $pattern ]]; then
      missing+=("$name=$pattern")
    fi
  done < "$MAIA_ROOT/tools/debian-packages.txt"
  ((${#missing[@]} == 0)) && return 0
  log "installing Debian packages: ${missing[*]}"
  local sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
}

python_for_venv() {
  local candidate
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      command -v "$candidate"
      return
    fi
  done
  die "Python 3.11 is required (the torch 2.13.0 CPU wheel is built for it)"
}

setup_venv() {
  local requirements="$MAIA_ROOT/tools/requirements.txt"
  local stamp="$MAIA_VENV/.maia-requirements.sha256"
  local wanted
  wanted="$(sha256sum "$requirements" | cut -d' ' -f1)"
  if [[ -x "$MAIA_VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]]; then
    return 0
  fi
  if [[ ! -x "$MAIA_VENV/bin/python" ]]; then
    log "creating the Python environment .venv"
    "$(python_for_venv)" -m venv "$MAIA_VENV"
  fi
  log "installing Python packages from tools/requirements.txt"
  "$MAIA_VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
  echo "$wanted" > "$stamp"
}

# The project's Python packages, editable (compat mode: a plain path in a
# .pth file; the default mode's import finder costs every Python start in the
# venv ~25 ms):
# - torch_maia (runtime/python): the extension is built in place by the
#   release build; its torch.backends entry point makes `import torch` load maia.
# - maia_inductor (inductor_plugin): torch.compile for maia.
install_editable() {
  local name="$1" dir="$2"
  local stamp="$MAIA_VENV/.maia-$name.sha256"
  local wanted
  # The stamp covers the package metadata and how it is installed.
  wanted="$( (cat "$dir/pyproject.toml"; declare -f install_editable) | sha256sum | cut -d' ' -f1)"
  [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]] && return 0
  log "installing $name (editable) into .venv"
  "$MAIA_VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
    --no-build-isolation --config-settings editable_mode=compat -e "$dir"
  echo "$wanted" > "$stamp"
}

install_debian_packages
setup_venv
install_editable torch_maia "$MAIA_ROOT/runtime/python"
install_editable maia_inductor "$MAIA_ROOT/inductor_plugin"
if ((build)); then
  maia_build release
fi
