#!/usr/bin/env bash
# The tests of test/cpp (CMakeLists.txt sets the MAIA_* environment).
#   cpp_example.sh example
#       cmake --install the build into $MAIA_WORK_DIR/prefix, configure and
#       build examples/cpp_training against it, run it (no Python, no
#       MAIA_KERNEL_DIR: the installed library finds its kernels itself).
#   cpp_example.sh aoti
#       (after `example`, which installed the prefix) build examples/cpp_aoti
#       against the prefix, compile AOTInductor packages of zoo models with
#       $MAIA_PYTHON (tools/bench/aoti_packages.py), and run each from C++
#       without Python against eager CPU's outputs, at two batch sizes.
#   cpp_example.sh symbols <list>
#       the dynamic symbols the example binary needs that libmaia_*.so of the
#       prefix define must be exactly <list> (mangled names, sorted), and
#       each must still be exported; prints the difference, demangled.
set -euo pipefail

prefix="$MAIA_WORK_DIR/prefix"
build="$MAIA_WORK_DIR/build"
binary="$build/maia_cpp_training"

step() { echo "== $*"; }

# build_example <directory under examples/> <build directory>
build_example() {
  local launcher=()
  [[ -n "${MAIA_CCACHE:-}" ]] && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="$MAIA_CCACHE")
  CCACHE_BASEDIR="$MAIA_SOURCE_DIR" CCACHE_NOHASHDIR=1 \
  cmake -S "$MAIA_SOURCE_DIR/examples/$1" -B "$2" -G "$MAIA_CMAKE_GENERATOR" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$MAIA_CXX_COMPILER" "${launcher[@]}" \
    -DCMAKE_PREFIX_PATH="$prefix;$MAIA_TORCH_CMAKE_PREFIX" --log-level=WARNING > /dev/null
  CCACHE_BASEDIR="$MAIA_SOURCE_DIR" CCACHE_NOHASHDIR=1 cmake --build "$2"
}

example() {
  rm -rf "$prefix" "$build"
  step "install into $prefix"
  cmake --install "$MAIA_BUILD_DIR" --prefix "$prefix" > "$MAIA_WORK_DIR.install.log" ||
    { cat "$MAIA_WORK_DIR.install.log"; exit 1; }
  find "$prefix" -type f | sed "s|^$prefix/|   |" | sort
  step "configure and build examples/cpp_training against it"
  build_example cpp_training "$build"
  step "run it"
  # No Python is started and nothing points into the build tree.
  env -u MAIA_KERNEL_DIR -u PYTHONPATH "$binary"
}

aoti() {
  local aoti_build="$MAIA_WORK_DIR/aoti-build" packages="$MAIA_WORK_DIR/aoti-packages"
  [[ -d "$prefix" ]] || { echo "no $prefix: run the test cpp.example first"; exit 1; }
  rm -rf "$aoti_build" "$packages"
  step "configure and build examples/cpp_aoti against $prefix"
  build_example cpp_aoti "$aoti_build"
  step "compile AOTInductor packages (Python)"
  "$MAIA_PYTHON" "$MAIA_SOURCE_DIR/tools/bench/aoti_packages.py" --out "$packages" gpt2_block cnn
  local name
  for name in gpt2_block cnn; do
    step "run $name.pt2 from C++"
    env -u MAIA_KERNEL_DIR -u PYTHONPATH \
      "$aoti_build/maia_aoti_run" "$packages/$name.pt2" "$packages/$name.cases.pt"
  done
}

symbols() {
  local list="$1" needed exported wanted
  [[ -x "$binary" ]] || { echo "no $binary: run the test cpp.example first"; exit 1; }
  needed="$(nm -D --undefined-only "$binary" | awk '{print $NF}' | sed 's/@.*//' | sort -u)"
  exported="$(nm -D --defined-only "$prefix"/lib*/libmaia_*.so | awk 'NF == 3 {print $3}' |
              sed 's/@.*//' | sort -u)"
  wanted="$(sed -e '/^#/d' -e '/^$/d' "$list" | sort -u)"
  local used missing extra unlisted
  used="$(comm -12 <(echo "$needed") <(echo "$exported"))"
  missing="$(comm -23 <(echo "$wanted") <(echo "$exported"))"   # listed, no longer exported
  extra="$(comm -23 <(echo "$wanted") <(echo "$used") | comm -23 - <(echo "$missing"))"  # not needed
  unlisted="$(comm -13 <(echo "$wanted") <(echo "$used"))"      # needed, not listed
  echo "the example needs $(echo "$used" | grep -c .) symbols of libmaia_*.so:"
  echo "$used" | c++filt | sed 's/^/   /'
  local status=0
  if [[ -n "$missing" ]]; then
    echo "FAIL: listed in $list but not exported by libmaia_*.so:"
    echo "$missing" | c++filt | sed 's/^/   /'
    status=1
  fi
  if [[ -n "$unlisted" ]]; then
    echo "FAIL: needed by the example but not listed in $list (add them if intended):"
    echo "$unlisted" | sed 's/^/   /'
    status=1
  fi
  if [[ -n "$extra" ]]; then
    echo "FAIL: listed in $list but no longer needed by the example (remove them):"
    echo "$extra" | c++filt | sed 's/^/   /'
    status=1
  fi
  exit $status
}

case "${1:-}" in
  example) example ;;
  aoti) aoti ;;
  symbols) symbols "$2" ;;
  *) echo "usage: cpp_example.sh example | aoti | symbols <list>" >&2; exit 2 ;;
esac
