"""torch.compile on maia against Inductor on the CPU, for the model zoo.

For each model, in fresh processes (so compile times are real):
  cpu cold   Inductor CPU: first call (compile) with an empty cache, then
             the steady-state time per call
  maia cold  the same on maia, plus eager maia's steady-state time
  maia warm  a new process with the caches hot: time of the first call
Ratios: compiled maia / Inductor CPU (time), eager maia / compiled maia
(speed-up), cold compile maia / cold compile CPU; geomeans over the zoo.
Steady-state times are the min over --repeat calls (inference, no_grad).

Training entries (--zoo training) time one SGD step: forward and backward
through torch.compile(model), the optimizer step through
torch.compile(optimizer.step); eager is the same step uncompiled. For
inference models the first compiled result is compared with eager maia
(max_abs_diff_vs_eager in --json).

Usage: compile_bench.py [--zoo small|realistic|training|all] [--models mlp,...]
                        [--repeat 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


TRAINING = {"train_mlp": "mlp", "train_gpt2_block": "gpt2_block"}


def training_step(model, inputs):
    """One SGD step (forward, backward, optimizer) of model; step(m) runs it
    with m as the forward (the model itself or its compiled form)."""
    import torch

    import model_zoo

    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9, foreach=True)

    def step(forward, optimizer_step):
        loss = model_zoo.first_tensor(forward(*inputs)).float().pow(2).mean()
        loss.backward()
        optimizer_step()
        optimizer.zero_grad(set_to_none=False)
        return loss.detach()

    return optimizer, step


def child(model_name: str, device: str, repeat: int, eager: bool) -> dict:
    start = time.perf_counter()
    import copy

    import torch

    sys.path.insert(0, str(HERE))
    import model_zoo

    if device == "maia":
        torch.maia.set_fallback_warnings(False)
    sync = torch.maia.synchronize if device == "maia" else (lambda: None)
    training = model_name in TRAINING
    model, inputs = model_zoo.build(TRAINING.get(model_name, model_name))
    if training:
        model.train()
    model = model.to(device)
    inputs = tuple(x.to(device) for x in inputs)
    result = {"import_and_build_s": time.perf_counter() - start}

    def steady(fn):
        times = []
        for i in range(repeat + 3):
            begin = time.perf_counter()
            fn()
            sync()
            if i >= 3:
                times.append(time.perf_counter() - begin)
        return min(times)

    if training:
        eager_model = copy.deepcopy(model)
        optimizer, step = training_step(model, inputs)
        compiled_forward = torch.compile(model)
        compiled_optimizer_step = torch.compile(optimizer.step)
        run_compiled = lambda: step(compiled_forward, compiled_optimizer_step)  # noqa: E731
        eager_optimizer, eager_step = training_step(eager_model, inputs)
        run_eager = lambda: eager_step(eager_model, eager_optimizer.step)  # noqa: E731
        context = torch.enable_grad()
    else:
        compiled = torch.compile(model)
        run_compiled = lambda: compiled(*inputs)  # noqa: E731
        run_eager = lambda: model(*inputs)  # noqa: E731
        context = torch.no_grad()
    with context:
        begin = time.perf_counter()
        first = run_compiled()
        sync()
        result["first_call_s"] = time.perf_counter() - begin
        if eager and not training:
            reference = model_zoo.first_tensor(run_eager())
            result["max_abs_diff_vs_eager"] = float(
                (model_zoo.first_tensor(first).float() - reference.float()).abs().max())
        result["compiled_s"] = steady(run_compiled)
        if eager:
            result["eager_s"] = steady(run_eager)
    return result


def run_child(model: str, device: str, cache_dir: str, repeat: int, eager: bool) -> dict:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache_dir}
    args = [sys.executable, __file__, "--child", model, device, str(repeat), str(int(eager))]
    output = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800)
    if output.returncode != 0:
        raise RuntimeError(f"{model} on {device} failed:\n{output.stderr[-3000:]}")
    return json.loads(output.stdout.strip().splitlines()[-1])


def geomean(values):
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=None, help="comma-separated; default: --zoo's")
    parser.add_argument("--zoo", choices=["small", "realistic", "training", "all"],
                        default="small",
                        help="small: model_zoo.ZOO; realistic: realistic_zoo.py; training: "
                             "compiled training steps (forward, backward, SGD) of the MLP and "
                             "the GPT-2 block")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        model, device, repeat, eager = options.child
        print(json.dumps(child(model, device, int(repeat), eager == "1")))
        return

    sys.path.insert(0, str(HERE))
    import model_zoo
    import torch

    from realistic_zoo import REALISTIC_ZOO

    zoos = {"small": list(model_zoo.ZOO), "realistic": list(REALISTIC_ZOO),
            "training": list(TRAINING)}
    zoos["all"] = zoos["small"] + zoos["realistic"] + zoos["training"]
    models = options.models.split(",") if options.models else zoos[options.zoo]
    rows = []
    print(f"{'model':<17}{'cpu ind ms':>11}{'maia comp ms':>13}{'maia eager ms':>14}"
          f"{'comp/cpu':>9}{'eager/comp':>11}{'cold cpu s':>11}{'cold maia s':>12}"
          f"{'cold ratio':>11}{'warm maia s':>12}")
    for name in models:
        with tempfile.TemporaryDirectory() as cpu_cache, \
                tempfile.TemporaryDirectory() as maia_cache:
            cpu = run_child(name, "cpu", cpu_cache, options.repeat, eager=False)
            maia = run_child(name, "maia", maia_cache, options.repeat, eager=True)
            warm = run_child(name, "maia", maia_cache, 3, eager=False)
        row = {
            "model": name,
            "inductor_cpu_ms": cpu["compiled_s"] * 1e3,
            "maia_compiled_ms": maia["compiled_s"] * 1e3,
            "maia_eager_ms": maia["eager_s"] * 1e3,
            "compiled_vs_inductor_cpu": maia["compiled_s"] / cpu["compiled_s"],
            "eager_vs_compiled": maia["eager_s"] / maia["compiled_s"],
            "cold_compile_cpu_s": cpu["first_call_s"],
            "cold_compile_maia_s": maia["first_call_s"],
            "cold_compile_ratio": maia["first_call_s"] / cpu["first_call_s"],
            "warm_start_maia_s": warm["first_call_s"],
        }
        rows.append(row)
        print(f"{name:<17}{row['inductor_cpu_ms']:>11.3f}{row['maia_compiled_ms']:>13.3f}"
              f"{row['maia_eager_ms']:>14.3f}{row['compiled_vs_inductor_cpu']:>9.2f}"
              f"{row['eager_vs_compiled']:>11.2f}{row['cold_compile_cpu_s']:>11.2f}"
              f"{row['cold_compile_maia_s']:>12.2f}{row['cold_compile_ratio']:>11.2f}"
              f"{row['warm_start_maia_s']:>12.2f}", flush=True)
    summary = {
        "geomean_compiled_vs_inductor_cpu": geomean(r["compiled_vs_inductor_cpu"] for r in rows),
        "geomean_eager_vs_compiled": geomean(r["eager_vs_compiled"] for r in rows),
        "geomean_cold_compile_ratio": geomean(r["cold_compile_ratio"] for r in rows),
        "max_warm_start_maia_s": max(r["warm_start_maia_s"] for r in rows),
    }
    print("geomean compiled maia / Inductor CPU: "
          f"{summary['geomean_compiled_vs_inductor_cpu']:.2f} (target <= 1.0, no model above 1.15: "
          f"worst {max(r['compiled_vs_inductor_cpu'] for r in rows):.2f})")
    print(f"geomean eager maia / compiled maia: {summary['geomean_eager_vs_compiled']:.2f} "
          "(target >= 1.3, none below 1.0)")
    print(f"geomean cold compile maia / CPU: {summary['geomean_cold_compile_ratio']:.2f} "
          "(target <= 1.0)")
    print(f"slowest warm start: {summary['max_warm_start_maia_s']:.2f} s (target <= 2)")
    if options.json:
        Path(options.json).write_text(json.dumps({
            "rows": rows, "summary": summary, "threads": torch.get_num_threads(),
            "torch_config": torch.__config__.show()}, indent=2))


if __name__ == "__main__":
    main()
