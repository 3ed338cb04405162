"""nn.Linear at small batch (the rows M of the GEMM): eager maia vs eager CPU
torch (MKL, as many threads as maia has device cores), in the same run
(interleaved rounds, best round, per call = a round of calls plus one
synchronize, / calls).

At M = 1-4 a linear layer reads its weight once and does little arithmetic
per byte: the time is the weight's read plus per-call overheads. The table
also gives the weight bytes read per second, to set against the machine's
read bandwidth (tools/bench/eager_bench.py) for weights larger than the
caches.

Usage: python tools/bench/linear_bench.py [--batches 1 2 4 64]
           [--shapes 256x256 768x3072 1024x1024 4096x1024] [--calls 200]
"""

import argparse

import torch

from eager_bench import interleaved


def parse_shape(text):
    in_features, out_features = (int(v) for v in text.split("x"))
    return in_features, out_features


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 4, 64])
    parser.add_argument("--shapes", type=parse_shape, nargs="+",
                        default=[(256, 256), (768, 3072), (1024, 1024), (4096, 1024)])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()

    cores = torch.maia.get_device_properties(0)["core_count"]
    torch.set_num_threads(cores)
    print(f"{cores} maia cores, {torch.get_num_threads()} CPU threads")
    print(f"{'in x out':>11} {'M':>4} {'cpu us':>9} {'maia us':>9} {'maia/cpu':>9} "
          f"{'maia weight GB/s':>17}")
    ratios = []
    for in_features, out_features in args.shapes:
        weight = torch.randn(out_features, in_features)
        bias = torch.randn(out_features)
        weight_maia, bias_maia = weight.to("maia"), bias.to("maia")
        for batch in args.batches:
            x = torch.randn(batch, in_features)
            x_maia = x.to("maia")
            cpu_s, maia_s = interleaved(
                lambda: torch.nn.functional.linear(x, weight, bias),
                lambda: torch.nn.functional.linear(x_maia, weight_maia, bias_maia),
                calls=args.calls, rounds=args.rounds, settle_s=0.02)
            torch.testing.assert_close(
                torch.nn.functional.linear(x_maia, weight_maia, bias_maia).cpu(),
                torch.nn.functional.linear(x, weight, bias), rtol=1e-4, atol=1e-4)
            ratios.append(maia_s / cpu_s)
            print(f"{in_features:>5}x{out_features:<5} {batch:>4} {cpu_s * 1e6:>9.1f} "
                  f"{maia_s * 1e6:>9.1f} {maia_s / cpu_s:>9.2f} "
                  f"{weight.numel() * 4 / maia_s * 1e-9:>17.1f}")
    geomean = 1.0
    for r in ratios:
        geomean *= r
    print(f"geomean maia/cpu time: {geomean ** (1 / len(ratios)):.2f} (lower is better)")


if __name__ == "__main__":
    main()
