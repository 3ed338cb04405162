"""Compiled linear + bias + gelu (+ residual) on maia: the GEMM template
kernel with the epilogue fused (one launch) against the extern eager GEMM
plus a pointwise kernel (maia_inductor.config.gemm_templates = False), in
the same run: both compiled up front, then interleaved rounds, best round,
per call = a round of calls plus one synchronize, / calls.

With --models, whole models of the zoo (model_zoo.py, e.g. mlp,gpt2_block;
inference, no_grad) instead, compiled both ways in one process and
alternated the same way: the before/after of the templates on models
whose linears take fused epilogues.

Usage: python tools/bench/gemm_template_bench.py [--shapes 64x768x3072 ...]
           [--models mlp,gpt2_block,...] [--calls 20] [--rounds 9] [--json out.json]
(shapes are M x K x N: rows, in features, out features).
"""

import argparse
import json
import time

import torch
import torch.nn.functional as F

from eager_bench import per_call

import maia_inductor.config as maia_config


def parse_shape(text):
    return tuple(int(v) for v in text.split("x"))


def alternate(extern_call, template_call, calls, rounds):
    extern_best = template_best = float("inf")
    for _ in range(rounds):
        extern_best = min(extern_best, per_call(extern_call, calls, torch.maia.synchronize))
        time.sleep(0.02)
        template_best = min(template_best, per_call(template_call, calls, torch.maia.synchronize))
        time.sleep(0.02)
    return extern_best, template_best


def compare_models(args):
    import copy

    import model_zoo

    print(f"{'model':>16} {'extern us':>10} {'template us':>12} {'extern/template':>16}")
    rows = []
    for name in args.models.split(","):
        model, inputs = model_zoo.build(name)
        with torch.no_grad():
            expected = model_zoo.first_tensor(model(*inputs))
        on_maia = copy.deepcopy(model).to("maia")
        inputs = [x.to("maia") for x in inputs]
        torch._dynamo.reset()
        extern_model = torch.compile(copy.deepcopy(on_maia))
        template_model = torch.compile(copy.deepcopy(on_maia))
        with torch.no_grad():
            for compiled, templates in ((extern_model, False), (template_model, True)):
                with maia_config.patch(gemm_templates=templates):
                    out = model_zoo.first_tensor(compiled(*inputs))
                torch.testing.assert_close(out.cpu(), expected, rtol=2e-4, atol=2e-4)
            extern_s, template_s = alternate(lambda: extern_model(*inputs),
                                             lambda: template_model(*inputs), args.calls,
                                             args.rounds)
        rows.append({"model": name, "extern_us": extern_s * 1e6, "template_us": template_s * 1e6,
                     "extern_over_template": extern_s / template_s})
        print(f"{name:>16} {extern_s * 1e6:>10.1f} {template_s * 1e6:>12.1f} "
              f"{extern_s / template_s:>16.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", type=parse_shape, nargs="+",
                        default=[(8, 768, 3072), (64, 768, 3072), (256, 768, 3072),
                                 (512, 1024, 1024), (1024, 1024, 4096), (2048, 768, 768)])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--models", default="")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    if args.models:
        return compare_models(args)

    def linear_gelu(x, w, b, r):
        return F.gelu(F.linear(x, w, b))

    def linear_gelu_add(x, w, b, r):
        return F.gelu(F.linear(x, w, b)) + r

    print(f"{'model':>16} {'M x K x N':>17} {'extern us':>10} {'template us':>12} "
          f"{'extern/template':>16} {'template GFLOP/s':>17}")
    rows = []
    for fn in (linear_gelu, linear_gelu_add):
        for m, k, n in args.shapes:
            x, w, b, r = (torch.randn(m, k), torch.randn(n, k) / k ** 0.5, torch.randn(n),
                          torch.randn(m, n))
            expected = fn(x, w, b, r)
            inputs = [t.to("maia") for t in (x, w, b, r)]
            # Two code objects, so two Dynamo caches; reset per shape (the
            # recompile limit).
            torch._dynamo.reset()
            extern_fn = torch.compile(lambda *a: fn(*a), dynamic=False)
            template_fn = torch.compile(lambda *a: fn(*a), dynamic=False)
            with maia_config.patch(gemm_templates=False):
                extern_out = extern_fn(*inputs)
            with maia_config.patch(gemm_templates=True):
                template_out = template_fn(*inputs)
            for out in (extern_out, template_out):
                torch.testing.assert_close(out.cpu(), expected, rtol=1e-3, atol=1e-3)
            extern_best, template_best = alternate(lambda: extern_fn(*inputs),
                                                   lambda: template_fn(*inputs), args.calls,
                                                   args.rounds)
            gflops = 2 * m * k * n / template_best * 1e-9
            rows.append({"model": fn.__name__, "m": m, "k": k, "n": n,
                         "extern_us": extern_best * 1e6, "template_us": template_best * 1e6,
                         "extern_over_template": extern_best / template_best})
            print(f"{fn.__name__:>16} {f'{m}x{k}x{n}':>17} {extern_best * 1e6:>10.1f} "
                  f"{template_best * 1e6:>12.1f} {extern_best / template_best:>16.2f} "
                  f"{gflops:>17.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
