#!/usr/bin/env bash
# ctest packaging.wheel (test/packaging/CMakeLists.txt): builds the torch_maia
# wheel of the checkout, checks its contents, installs it into a fresh venv
# that holds only torch 2.13.0 (and torch's own dependencies), and runs
# wheel_smoke.py there from a directory outside the checkout.
#
# Environment: MAIA_SOURCE_DIR (the checkout), MAIA_PYTHON (the project's
# Python: pip, scikit-build-core and torch to build with), MAIA_WORK_DIR
# (kept between runs: the wheel, the torch wheelhouse, logs).
set -euo pipefail
: "${MAIA_SOURCE_DIR:?}" "${MAIA_PYTHON:?}" "${MAIA_WORK_DIR:?}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$MAIA_WORK_DIR"
mkdir -p "$work"
step() { printf '[wheel] %s (%ds)\n' "$*" "$SECONDS"; }

# 1. The wheel, as a user builds it (`pip wheel .`), but without build
# isolation: the project's venv has scikit-build-core (tools/requirements.txt)
# and torch, so nothing is downloaded. pyproject.toml keeps the CMake build in
# build/wheel, so a rerun is incremental.
step "building the wheel (log: $work/pip-wheel.log)"
rm -rf "$work/dist"
if ! CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$MAIA_PYTHON" -m pip wheel -v \
    --no-build-isolation --no-deps --disable-pip-version-check \
    -w "$work/dist" "$MAIA_SOURCE_DIR" >"$work/pip-wheel.log" 2>&1; then
  tail -n 60 "$work/pip-wheel.log"
  echo "[wheel] error: pip wheel failed (log above: $work/pip-wheel.log)" >&2
  exit 1
fi
wheels=("$work"/dist/torch_maia-*.whl)
((${#wheels[@]} == 1)) && [[ -f "${wheels[0]}" ]] ||
  { echo "[wheel] error: expected one torch_maia wheel in $work/dist" >&2; exit 1; }
wheel="${wheels[0]}"
step "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

# 2. Its contents: every component in place, no file naming the checkout
# (which holds the build trees and the project's venv). The one absolute
# RUNPATH entry allowed is the system's LLVM 19 library directory
# (libMLIR.so.19.1, for maia-compile).
"$MAIA_PYTHON" "$here/check_wheel.py" "$wheel" \
  --forbid "$MAIA_SOURCE_DIR" \
  --system-dir /usr/lib/llvm-19/lib
step "wheel contents checked"

# 3. torch 2.13.0 and its dependencies as wheels, fetched once with pip's own
# configuration (torch comes from the machine's local wheel, pip's cache
# serves the rest) and kept: the venvs of later runs install offline.
# maia's own dependency (filelock) is among torch's.
wheelhouse="$work/wheelhouse"
requirements="torch==2.13.0 filelock"
if [[ "$(cat "$wheelhouse/.requirements" 2>/dev/null)" != "$requirements" ]]; then
  step "collecting the wheels of $requirements into $wheelhouse"
  rm -rf "$wheelhouse"
  # shellcheck disable=SC2086  # the requirements are words
  "$MAIA_PYTHON" -m pip download -q --disable-pip-version-check --only-binary=:all: \
    -d "$wheelhouse" $requirements
  echo "$requirements" >"$wheelhouse/.requirements"
fi

# 4. A fresh venv outside the checkout, without pip (the project's pip
# installs into it through --python): torch, its dependencies and the wheel,
# from local files only.
tmp="$(mktemp -d /tmp/maia-wheel-test.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
base_python="$("$MAIA_PYTHON" -c 'import sys; print(sys._base_executable)')"
"$base_python" -m venv --without-pip "$tmp/venv"
step "installing torch and the wheel into $tmp/venv"
"$MAIA_PYTHON" -m pip --python "$tmp/venv/bin/python" install -q --disable-pip-version-check \
  --no-index --find-links "$wheelhouse" "$wheel"
"$MAIA_PYTHON" -m pip --python "$tmp/venv/bin/python" list --format=freeze \
  --disable-pip-version-check >"$tmp/installed.txt"
# Only torch, what torch itself requires, and the wheel (no project package,
# no editable install, nothing else from the project's venv).
"$MAIA_PYTHON" "$here/check_wheel.py" --venv-contents "$tmp/installed.txt" --wheelhouse "$wheelhouse"

# 5. The smoke test, from a directory outside the checkout, with none of the
# variables that point the development set-up into the build tree.
mkdir "$tmp/run"
cp "$MAIA_SOURCE_DIR/test/compiler/e2e/kernels/softmax.mlir" "$here/wheel_smoke.py" "$tmp/run/"
step "running the smoke test in $tmp/run"
(cd "$tmp/run" &&
  env -u PYTHONPATH -u MAIA_KERNEL_DIR -u MAIA_COMPILE -u VIRTUAL_ENV \
    PATH="$tmp/venv/bin:/usr/bin:/bin" TORCHINDUCTOR_CACHE_DIR="$tmp/inductor-cache" \
    "$tmp/venv/bin/python" wheel_smoke.py "$MAIA_SOURCE_DIR")
step "passed"
