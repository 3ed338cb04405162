"""Compiled convolution + BatchNorm (eval) + ReLU (+ residual) on maia: the
convolution template kernel with the epilogue fused (one launch) against
the extern eager convolution plus a pointwise kernel
(maia_inductor.config.conv_templates = False), in the same run: both
compiled up front, then interleaved rounds, best round, per call = a round
of calls plus one synchronize, / calls. Inductor on the CPU is not timed in
this process (maia's idle cores spin between launches and would slow it):
compile_bench.py compares against it in separate processes.

With --models, whole models of the zoos (model_zoo.py, realistic_zoo.py,
e.g. resnet18, cnn; inference, no_grad) instead, compiled both ways in
one process and alternated the same way.

Usage: python tools/bench/conv_template_bench.py [--models resnet18,cnn]
           [--calls 5] [--rounds 7] [--json out.json]
"""

import argparse
import copy
import json
import time
import types
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from eager_bench import per_call

import maia_inductor.config as maia_config
from maia_inductor.testing import capture_kernel_sources

# ResNet-18's convolutions at batch 4 (224x224): (C, O, H, kernel, stride).
LAYERS = [(3, 64, 224, 7, 2), (64, 64, 56, 3, 1), (64, 128, 56, 3, 2), (128, 128, 28, 3, 1),
          (256, 256, 14, 3, 1), (512, 512, 7, 3, 1)]


class ConvBlock(nn.Module):
    """conv -> bn (eval) -> relu, plus a residual input when `residual`."""

    def __init__(self, c, o, kernel, stride, residual):
        super().__init__()
        self.conv = nn.Conv2d(c, o, kernel, stride, kernel // 2, bias=False)
        self.bn = nn.BatchNorm2d(o)
        self.residual = residual

    def forward(self, x, r):
        y = self.bn(self.conv(x))
        # Channels-last out, as the next layer of a network reads it (a
        # graph output in eager's NCHW takes a kernel of its own).
        return F.relu(y + r if self.residual else y).contiguous(memory_format=torch.channels_last)


def alternate(calls_by_name, calls, rounds):
    best = {name: float("inf") for name in calls_by_name}
    for _ in range(rounds):
        for name, (fn, sync) in calls_by_name.items():
            best[name] = min(best[name], per_call(fn, calls, sync))
            time.sleep(0.02)
    return best


def compiled_separately(module, name):
    """torch.compile of a call of module whose code object is its own:
    Dynamo caches compiled graphs per code object, and a second
    torch.compile of the same module class would be served the first's
    graph (its guards do not see maia_inductor's config)."""
    def call(*args):
        return module(*args)

    code = call.__code__.replace(co_name=f"call_{name}")
    return torch.compile(types.FunctionType(code, call.__globals__, closure=call.__closure__))


def compiled_both_ways(model, inputs, expected, atol):
    """{name: (call, sync)} for maia extern and maia template."""
    on_maia = copy.deepcopy(model).to("maia")
    maia_inputs = [x.to("maia") for x in inputs]
    torch._dynamo.reset()
    extern_model = compiled_separately(copy.deepcopy(on_maia), "extern")
    template_model = compiled_separately(copy.deepcopy(on_maia), "template")
    with torch.no_grad():
        for compiled, templates in ((extern_model, False), (template_model, True)):
            # No FX graph cache: the kernels must be generated to be seen.
            with (maia_config.patch(conv_templates=templates),
                  torch._inductor.config.patch(force_disable_caches=True),
                  capture_kernel_sources() as kernels):
                out = compiled(*maia_inputs)
            torch.testing.assert_close(out.cpu(), expected, rtol=atol, atol=atol)
            has_template = any(k.name.startswith("maia_conv_") for k in kernels)
            assert has_template == templates, [k.name for k in kernels]
    return {"extern": (lambda: extern_model(*maia_inputs), torch.maia.synchronize),
            "template": (lambda: template_model(*maia_inputs), torch.maia.synchronize)}


def report(rows, label, best, extra):
    row = {**extra, **{f"{k}_us": v * 1e6 for k, v in best.items()},
           "extern_over_template": best["extern"] / best["template"]}
    rows.append(row)
    print(f"{label:>28} {best['extern'] * 1e6:>10.0f} {best['template'] * 1e6:>12.0f} "
          f"{row['extern_over_template']:>16.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    torch.maia.set_fallback_warnings(False)
    warnings.filterwarnings("ignore", message=".*force_disable_caches")
    print(f"{'case':>28} {'extern us':>10} {'template us':>12} {'extern/template':>16}")
    rows = []
    with torch.no_grad():
        if args.models:
            import model_zoo

            for name in args.models.split(","):
                model, inputs = model_zoo.build(name)
                expected = model_zoo.first_tensor(model(*inputs))
                calls = compiled_both_ways(model, inputs, expected, 1e-3)
                report(rows, name, alternate(calls, args.calls, args.rounds), {"model": name})
        else:
            for c, o, h, kernel, stride in LAYERS:
                for residual in (False, True):
                    if residual and stride != 1:
                        continue
                    torch.manual_seed(0)
                    block = ConvBlock(c, o, kernel, stride, residual).eval()
                    x = torch.randn(4, c, h, h).contiguous(memory_format=torch.channels_last)
                    out_h = (h + 2 * (kernel // 2) - kernel) // stride + 1
                    r = torch.randn(4, o, out_h, out_h).contiguous(
                        memory_format=torch.channels_last)
                    calls = compiled_both_ways(block, [x, r], block(x, r), 2e-3)
                    label = f"{c}->{o} {h}x{h} k{kernel}s{stride}{' +res' if residual else ''}"
                    report(rows, label, alternate(calls, args.calls, args.rounds),
                           {"c": c, "o": o, "h": h, "kernel": kernel, "stride": stride,
                            "residual": residual})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
