"""Batched products of the zoos' attention (and the zoos' linears) compiled on
maia three ways in one process, alternated: the extern eager GEMM
(maia_inductor.config.gemm_templates = False), the GEMM template with its
default tiles (a plain product forced to the template with
gemm_config="default"), and Inductor's max_autotune (the plugin times
the template's tile configurations and the extern kernel and keeps the
fastest; its choice is printed with the candidates' timings it measured,
kernel launches alone, in us). max_autotune is set alone, not
mode="max-autotune", which would also replay maia graphs (reduce-overhead)
and so measure something else.

Cases: `bmm` (nothing fused: is the extern rule right?), `bmm_bias_gelu`
(an epilogue to fuse), `linear_gelu` (mm + bias + gelu). Shapes are the
attention products of model_zoo.py (gpt2_block/bert_layer: batch 4 x 4
heads, seq 64, head 32) and of realistic_zoo.py's models were their
attention a bmm (gpt2_small4: 2 x 12 heads, seq 256, head 64; bert_base4:
8 x 12 heads, seq 128; llama2l: 16 heads, seq 256): q @ k^T (B x S x D x S)
and p @ v (B x S x S x D); the linears are the zoos' MLP products.

Per call = a round of calls plus one synchronize, / calls; min over rounds;
the variants alternate within each round.

Usage: python tools/bench/bmm_template_bench.py [--calls 20] [--rounds 7]
           [--cases bmm,bmm_bias_gelu,linear_gelu] [--json out.json]
"""

import argparse
import json
import time
import types

import torch
import torch.nn.functional as F
from eager_bench import per_call
from torch._inductor import config as inductor_config

import maia_inductor.config as maia_config
from maia_inductor import gemm_autotune

# B x M x K x N
ATTENTION_SHAPES = [
    ("zoo attention q@kT", (16, 64, 32, 64)), ("zoo attention p@v", (16, 64, 64, 32)),
    ("gpt2_small q@kT", (24, 256, 64, 256)), ("gpt2_small p@v", (24, 256, 256, 64)),
    ("bert_base q@kT", (96, 128, 64, 128)), ("bert_base p@v", (96, 128, 128, 64)),
    ("llama2l q@kT", (16, 256, 64, 256)), ("llama2l p@v", (16, 256, 256, 64)),
]
# M x K x N
LINEAR_SHAPES = [
    ("mlp 64x256x1024", (64, 256, 1024)), ("gpt2_small fc", (512, 768, 3072)),
    ("bert_base fc", (1024, 768, 3072)), ("bert_base qkv", (1024, 768, 768)),
]


def bmm(a, b, bias):
    return torch.bmm(a, b)


def bmm_bias_gelu(a, b, bias):
    return F.gelu(torch.bmm(a, b) + bias)


def linear_gelu(x, w, b):
    return F.gelu(F.linear(x, w, b))


CASES = {"bmm": bmm, "bmm_bias_gelu": bmm_bias_gelu, "linear_gelu": linear_gelu}
VARIANTS = {
    "extern": lambda: maia_config.patch(gemm_templates=False),
    "template": lambda: maia_config.patch(gemm_config="default"),
    "autotune": lambda: inductor_config.patch(max_autotune=True),
}


def own_code(fn, variant):
    """fn with a code object of its own: Dynamo caches compiled graphs per
    code object, so variants compiled from one function would share one."""
    code = fn.__code__.replace(co_name=f"{fn.__name__}_{variant}")
    return types.FunctionType(code, fn.__globals__, code.co_name)


def inputs_for(case, shape):
    if case == "linear_gelu":
        m, k, n = shape
        return torch.randn(m, k), torch.randn(n, k) / k ** 0.5, torch.randn(n)
    batch, m, k, n = shape
    return torch.randn(batch, m, k), torch.randn(batch, k, n) / k ** 0.5, torch.randn(n)


def measure(case, shape, calls, rounds):
    fn = CASES[case]
    args = inputs_for(case, shape)
    expected = fn(*args)
    on_maia = [t.to("maia") for t in args]
    torch._dynamo.reset()
    compiled, choice = {}, None
    for variant, patch in VARIANTS.items():
        decisions_before = set(gemm_autotune.decisions)
        compiled[variant] = torch.compile(own_code(fn, variant), dynamic=False)
        with patch():
            out = compiled[variant](*on_maia)
        torch.testing.assert_close(out.cpu(), expected, rtol=1e-3, atol=1e-3)
        if variant == "autotune":
            new = [gemm_autotune.decisions[k] for k in gemm_autotune.decisions
                   if k not in decisions_before]
            choice = new[0] if new else {"choice": "cached", "timings": {}}
    best = {variant: float("inf") for variant in compiled}
    for _ in range(rounds):
        for variant, fn_compiled in compiled.items():
            best[variant] = min(best[variant], per_call(lambda: fn_compiled(*on_maia), calls,
                                                        torch.maia.synchronize))
            time.sleep(0.01)
    return best, choice


def timings_text(timings):
    """The autotuner's own timings (kernel launches, min of runs), in us."""
    return " ".join(f"{name} {ms * 1e3:.0f}" for name, ms in timings.items())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cases", default="bmm,bmm_bias_gelu,linear_gelu")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    torch.maia.set_fallback_warnings(False)
    print(f"{'case':>14} {'shape':>26} {'extern us':>10} {'template us':>12} "
          f"{'autotune us':>12} {'ext/tmpl':>9} {'default/autotune':>17}  choice")
    rows = []
    for case in args.cases.split(","):
        shapes = LINEAR_SHAPES if case == "linear_gelu" else ATTENTION_SHAPES
        for label, shape in shapes:
            best, choice = measure(case, shape, args.calls, args.rounds)
            # default: what a compile without max-autotune generates
            default = best["extern"] if case == "bmm" else best["template"]
            rows.append({"case": case, "label": label, "shape": shape,
                         **{f"{v}_us": t * 1e6 for v, t in best.items()},
                         "extern_over_template": best["extern"] / best["template"],
                         "default_over_autotune": default / best["autotune"],
                         "choice": choice["choice"], "candidate_ms": choice["timings"]})
            print(f"{case:>14} {label + ' ' + 'x'.join(map(str, shape)):>26} "
                  f"{best['extern'] * 1e6:>10.1f} {best['template'] * 1e6:>12.1f} "
                  f"{best['autotune'] * 1e6:>12.1f} {best['extern'] / best['template']:>9.2f} "
                  f"{default / best['autotune']:>17.2f}  {choice['choice']} "
                  f"({timings_text(choice['timings'])})", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
