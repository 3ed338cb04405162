#!/usr/bin/env bash
# Runs the maia demo (setting everything up first): torch.compile of a
# GPT-2-style block on maia, checked against the CPU (tools/demo/compile_demo.py).
# The driver's C API demo: build/release/tools/maia-driver-demo.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
"$MAIA_ROOT/tools/setup.sh"
exec "$MAIA_VENV/bin/python" "$MAIA_ROOT/tools/demo/compile_demo.py"
