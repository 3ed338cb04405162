"""torchrun --nproc-per-node 2 starts ranks that use maia:LOCAL_RANK, with
"cpu:gloo,maia:maia" routing CPU tensors to gloo and maia tensors to maia."""

import os
import re
import subprocess
import sys
from pathlib import Path


def test_torchrun_two_ranks():
    script = Path(__file__).with_name("launch_script.py")
    result = subprocess.run(
        # --standalone: torchrun picks a free port itself.
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         str(script)],
        capture_output=True, text=True, timeout=240, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert result.returncode == 0, result.stdout + result.stderr
    # The ranks share torchrun's stdout: their lines may interleave.
    assert sorted(re.findall(r"rank \d: ok", result.stdout)) == ["rank 0: ok", "rank 1: ok"], \
        result.stdout
