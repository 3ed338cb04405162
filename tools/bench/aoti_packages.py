"""AOTInductor packages of zoo models for maia, and the files the C++ runner
(examples/cpp_aoti) checks them with.

    package(name, directory) -> (package path, cases path)

exports the model with a dynamic batch dimension, compiles it with
torch._inductor.aoti_compile_and_package on maia, and saves the cases
(inputs at two batch sizes and eager CPU's outputs) with torch.save.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch

import model_zoo

# Needed on maia: the precompiled header names torch's per-device header,
# which exists for in-tree devices only (docs/inductor.md).
INDUCTOR_CONFIGS = {"aot_inductor.precompile_headers": False}

BATCH_SIZES = (2, 5)


def _at_batch(inputs: tuple, batch: int) -> tuple:
    return tuple(torch.cat([x] * (batch // x.shape[0] + 1))[:batch] for x in inputs)


class FirstOutput(torch.nn.Module):
    """The model returning its main tensor only (transformers models return
    objects, such as a key-value cache, that export cannot flatten)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *inputs):
        return model_zoo.first_tensor(self.model(*inputs))


def export_for_maia(model: torch.nn.Module, inputs: tuple):
    """The model on maia exported with dimension 0 of every input dynamic."""
    maia_model = FirstOutput(copy.deepcopy(model)).to("maia")
    maia_inputs = tuple(x.to("maia") for x in inputs)
    batch = torch.export.Dim("batch", min=1, max=1024)
    shapes = tuple({0: batch} for _ in inputs)
    return torch.export.export(maia_model, maia_inputs, dynamic_shapes=(shapes,))  # forward(*inputs)


def compile_package(model: torch.nn.Module, inputs: tuple, path: Path) -> Path:
    exported = export_for_maia(model, inputs)
    return Path(torch._inductor.aoti_compile_and_package(
        exported, package_path=str(path), inductor_configs=INDUCTOR_CONFIGS))


def cases(model: torch.nn.Module, inputs: tuple) -> dict:
    """Inputs at BATCH_SIZES and eager CPU's first output for each."""
    batches = [_at_batch(inputs, b) for b in BATCH_SIZES]
    with torch.no_grad():
        expected = [model_zoo.first_tensor(model(*b)) for b in batches]
    return {"inputs": [list(b) for b in batches], "expected": expected}


def package(name: str, directory: Path) -> tuple[Path, Path]:
    model, inputs = model_zoo.build(name)
    directory.mkdir(parents=True, exist_ok=True)
    pt2 = compile_package(model, inputs, directory / f"{name}.pt2")
    cases_path = directory / f"{name}.cases.pt"
    torch.save(cases(model, inputs), cases_path)
    return pt2, cases_path


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for the files")
    parser.add_argument("models", nargs="+", choices=sorted(model_zoo.ZOO))
    args = parser.parse_args()
    import torch_maia  # noqa: F401  (the maia device)

    for name in args.models:
        pt2, cases_path = package(name, args.out)
        print(f"{name}: {pt2} {cases_path}")


if __name__ == "__main__":
    main()
