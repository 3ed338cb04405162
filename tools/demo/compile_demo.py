"""The maia demo: torch.compile of a GPT-2-style decoder block on maia.

Compiles the block for maia (Inductor fuses it, our plugin writes one MLIR
kernel per fused group, maia-compile turns each into a MAIA kernel binary,
the runtime launches them on the current stream), checks the result against
PyTorch on the CPU, and prints eager vs compiled time, the kernel count and
where each kernel's MLIR was written.
"""

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DUMP_DIR = Path(os.environ.setdefault("MAIA_INDUCTOR_DUMP_DIR",
                                      str(ROOT / "build" / "demo-kernels")))

import torch  # noqa: E402  (after MAIA_INDUCTOR_DUMP_DIR is set)

sys.path.insert(0, str(ROOT / "tools" / "bench"))
import model_zoo  # noqa: E402


def best_time(fn, repeat=20):
    for _ in range(3):
        fn()
    torch.maia.synchronize()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        torch.maia.synchronize()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    for stale in DUMP_DIR.glob("*"):
        stale.unlink()
    torch.maia.set_fallback_warnings(False)  # eager triu runs on the host for now
    props = torch.maia.get_device_properties(0)
    print(f"device: {props['name']} ({props['core_count']} cores), torch {torch.__version__}")

    torch.manual_seed(0)
    block = model_zoo.GPT2Block(dim=256, heads=8).eval()
    x = torch.randn(8, 128, 256)
    with torch.no_grad():
        expected = block(x)
        block_maia, x_maia = block.to("maia"), x.to("maia")
        compiled = torch.compile(block_maia)
        start = time.perf_counter()
        actual = compiled(x_maia)
        torch.maia.synchronize()
        compile_s = time.perf_counter() - start
        torch.testing.assert_close(actual.cpu(), expected, atol=2e-4, rtol=2e-4)
        print(f"compiled GPT-2-style block (dim 256, 8 heads, batch 8 x 128 tokens) in "
              f"{compile_s:.2f} s; matches the CPU result (atol 2e-4)")
        eager_s = best_time(lambda: block_maia(x_maia))
        compiled_s = best_time(lambda: compiled(x_maia))
    kernels = sorted(DUMP_DIR.glob("*.mlir"))
    print(f"eager maia {eager_s * 1e3:.2f} ms, compiled maia {compiled_s * 1e3:.2f} ms "
          f"({eager_s / compiled_s:.2f}x faster)")
    print(f"{len(kernels)} MAIA kernels; MLIR and binaries written to {DUMP_DIR}:")
    for kernel in kernels:
        print(f"  {kernel.name}")


if __name__ == "__main__":
    main()
