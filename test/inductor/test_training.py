"""Training steps compiled on maia (forward, backward, optimizer) against
the same steps eagerly on CPU, from the same seed."""

import copy
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "bench"))
import model_zoo  # noqa: E402


def train(model, batches, device, compile_step, optimizer_name):
    model = model.to(device).train()
    if optimizer_name == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(x, y):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    if compile_step:
        step = torch.compile(step)
    losses = [step(x.to(device), y.to(device)).item() for x, y in batches]
    return losses, [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize("optimizer_name", ["sgd", "adam"])
def test_mlp_training_matches_cpu(optimizer_name):
    model, _ = model_zoo.build("mlp")
    torch.manual_seed(1)
    data = [(torch.randn(32, 256), torch.randint(0, 10, (32,))) for _ in range(3)]
    batches = data * 10  # a learnable task: the same batches again
    cpu_losses, cpu_params = train(copy.deepcopy(model), batches, "cpu", False, optimizer_name)
    maia_losses, maia_params = train(copy.deepcopy(model), batches, "maia", True, optimizer_name)
    torch.testing.assert_close(maia_losses, cpu_losses, atol=1e-4, rtol=1e-4)
    for maia_param, cpu_param in zip(maia_params, cpu_params):
        torch.testing.assert_close(maia_param, cpu_param, atol=2e-4, rtol=2e-4)
    assert cpu_losses[-1] < cpu_losses[0]  # it learns


def test_transformer_block_training_matches_cpu():
    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = model_zoo.GPT2Block(dim=64, heads=4)
            self.head = torch.nn.Linear(64, 5)

        def forward(self, x):
            return self.head(self.block(x).mean(1))

    torch.manual_seed(0)
    model = Classifier()
    batches = [(torch.randn(4, 16, 64), torch.randint(0, 5, (4,))) for _ in range(10)]
    cpu_losses, cpu_params = train(copy.deepcopy(model), batches, "cpu", False, "adam")
    maia_losses, maia_params = train(copy.deepcopy(model), batches, "maia", True, "adam")
    torch.testing.assert_close(maia_losses, cpu_losses, atol=1e-4, rtol=1e-4)
    for maia_param, cpu_param in zip(maia_params, cpu_params):
        torch.testing.assert_close(maia_param, cpu_param, atol=5e-4, rtol=5e-4)
