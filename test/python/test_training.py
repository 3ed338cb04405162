"""Training on maia matches training on the CPU: an MLP and a small CNN, a few
hundred steps with SGD and Adam from the same initial weights and data.
Operators without a maia kernel yet run through the host fallback; the
numbers must agree either way."""

import copy

import pytest
import torch
from torch import nn

STEPS = 200


def mlp():
    return nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 64), nn.Tanh(),
                         nn.Linear(64, 4))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * 4 * 4, 4))


def data(kind, generator):
    if kind == "mlp":
        x = torch.randn(32, 16, generator=generator)
    else:
        x = torch.randn(16, 1, 8, 8, generator=generator)
    y = torch.randint(0, 4, (x.shape[0],), generator=generator)
    return x, y


def train(model, optimizer_cls, batches, device, steps):
    model = model.to(device)
    optimizer = optimizer_cls(model.parameters(), lr=0.05 if optimizer_cls is torch.optim.SGD
                              else 0.005)
    losses = []
    for step in range(steps):
        x, y = batches[step % len(batches)]
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses).cpu(), [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
@pytest.mark.parametrize("optimizer", [torch.optim.SGD, torch.optim.Adam],
                         ids=["sgd", "adam"])
def test_training_matches_cpu(kind, optimizer):
    torch.manual_seed(0)
    model = mlp() if kind == "mlp" else cnn()
    generator = torch.Generator().manual_seed(1)
    batches = [data(kind, generator) for _ in range(8)]
    steps = STEPS if kind == "mlp" else STEPS // 2
    cpu_losses, cpu_params = train(copy.deepcopy(model), optimizer, batches, "cpu", steps)
    maia_losses, maia_params = train(copy.deepcopy(model), optimizer, batches, "maia", steps)
    assert maia_losses[-1] < maia_losses[0], "training did not reduce the loss"
    # Summation orders differ (GEMM blocking, reductions), and the differences
    # compound over hundreds of steps: compare like two BLAS libraries would.
    torch.testing.assert_close(maia_losses, cpu_losses, atol=2e-3, rtol=2e-3)
    for mine, reference in zip(maia_params, cpu_params):
        torch.testing.assert_close(mine, reference, atol=2e-3, rtol=2e-3)
