#!/usr/bin/env bash
# Runs the maia demo (setting everything up first): the simulated MAIA
# device driven through its C API.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
"$MAIA_ROOT/tools/setup.sh"
exec "$(maia_build_dir release)/tools/maia-driver-demo"
