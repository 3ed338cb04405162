"""An AOTInductor package run from C++ vs the same model compiled in Python,
per call, on maia.

For each model of the small zoo: an AOTInductor package (dynamic batch,
tools/bench/aoti_packages.py) is timed by examples/cpp_aoti's runner (no
Python in the process) and by aoti_load_package in Python, against
torch.compile of the same model in this process (default mode, static
shapes) -- all at batch 2 with the same inputs. Rounds interleave the
three; each round times --calls calls and synchronizes at the end; the time
per call is the best round. Ratio = Python compiled / C++ package (> 1: the
package from C++ is faster). The device is simulated on the host's cores,
so a call's time is host time plus the device's share of the same CPUs.

The runner is built by the test cpp.aoti (ctest -R cpp.aoti) or by hand
(docs/cpp.md).

Usage: aoti_bench.py [--models mlp,cnn,...] [--calls 200] [--rounds 5]
                     [--runner build/release/test/cpp/example/aoti-build/maia_aoti_run]
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEFAULT_RUNNER = ROOT / "build/release/test/cpp/example/aoti-build/maia_aoti_run"
SMALL_ZOO = ["mlp", "cnn", "gpt2_block", "bert_layer", "rmsnorm_mlp"]


def per_call_us(fn, calls: int) -> float:
    import torch

    for _ in range(10):
        fn()
    torch.maia.synchronize()
    begin = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.maia.synchronize()
    return (time.perf_counter() - begin) / calls * 1e6


def cpp_per_call_us(runner: Path, pt2: Path, cases: Path, calls: int) -> float:
    result = subprocess.run([str(runner), str(pt2), str(cases), "--time", str(calls)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{runner} failed on {pt2}:\n{result.stdout}{result.stderr}")
    line = next(l for l in result.stdout.splitlines() if l.startswith("per_call_us "))
    return float(line.split()[1])


def bench_model(name: str, runner: Path, directory: Path, calls: int, rounds: int) -> dict:
    import copy

    import torch

    import aoti_packages
    import model_zoo

    pt2, cases_path = aoti_packages.package(name, directory)
    model, _ = model_zoo.build(name)
    inputs = [x.to("maia") for x in torch.load(cases_path)["inputs"][0]]
    torch._dynamo.reset()
    compiled = torch.compile(copy.deepcopy(model).to("maia"))
    loaded = torch._inductor.aoti_load_package(str(pt2))
    times = {"python_compiled": [], "python_package": [], "cpp_package": []}
    with torch.no_grad():
        torch.testing.assert_close(model_zoo.first_tensor(loaded(*inputs)).cpu(),
                                   model_zoo.first_tensor(compiled(*inputs)).cpu(),
                                   atol=2e-4, rtol=2e-4)
        for _ in range(rounds):
            times["python_compiled"].append(per_call_us(lambda: compiled(*inputs), calls))
            times["python_package"].append(per_call_us(lambda: loaded(*inputs), calls))
            times["cpp_package"].append(cpp_per_call_us(runner, pt2, cases_path, calls))
    return {key: min(values) for key, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(SMALL_ZOO))
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runner", type=Path, default=DEFAULT_RUNNER)
    args = parser.parse_args()
    if not args.runner.exists():
        raise SystemExit(f"no runner at {args.runner}: build it with "
                         "`cd build/release && ctest -R cpp.aoti` (or pass --runner)")
    sys.path.insert(0, str(HERE))
    import torch_maia  # noqa: F401

    print(f"{'model':<14}{'compiled (us)':>15}{'package py (us)':>17}"
          f"{'package C++ (us)':>18}{'ratio':>8}")
    ratios_under_1ms = []
    with tempfile.TemporaryDirectory() as directory:
        for name in args.models.split(","):
            t = bench_model(name, args.runner, Path(directory), args.calls, args.rounds)
            ratio = t["python_compiled"] / t["cpp_package"]
            if t["python_compiled"] < 1000:
                ratios_under_1ms.append(ratio)
            print(f"{name:<14}{t['python_compiled']:>15.1f}{t['python_package']:>17.1f}"
                  f"{t['cpp_package']:>18.1f}{ratio:>8.2f}", flush=True)
    if ratios_under_1ms:
        geomean = math.exp(sum(map(math.log, ratios_under_1ms)) / len(ratios_under_1ms))
        print(f"geomean ratio over the {len(ratios_under_1ms)} models under 1 ms per call "
              f"(compiled): {geomean:.2f} (target >= 1.2)")


if __name__ == "__main__":
    main()
