"""nn.LSTM, nn.GRU and nn.RNN on maia against the CPU: outputs, final
states and every gradient, with no operator on the host fallback. ATen
sends maia's LSTM and GRU steps to _thnn_fused_lstm_cell/_gru_cell (the
accelerator path, RnnCells.cpp) where the CPU runs the unfused cell, so
this is a differential test of those cells and their backward formulas."""

import pytest
import torch


def _run(module, x, state):
    out, final = module(x, state)
    finals = final if isinstance(final, tuple) else (final,)
    (out.square().sum() + sum(f.sum() for f in finals)).backward()
    return [out, *finals, x.grad] + [p.grad for p in module.parameters()]


CASES = [
    dict(num_layers=1),
    dict(num_layers=2, batch_first=True),
    dict(num_layers=2, bidirectional=True),
    dict(num_layers=1, bias=False),
    dict(num_layers=3, batch_first=True, bidirectional=True),
]


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matches_cpu(kind, case, dtype):
    torch.manual_seed(0)
    cls = getattr(torch.nn, kind)
    cpu = cls(7, 11, dtype=dtype, **case)
    maia = cls(7, 11, dtype=dtype, **case).to("maia")
    maia.load_state_dict(cpu.state_dict())
    batch, steps = 3, 5
    shape = (batch, steps, 7) if case.get("batch_first") else (steps, batch, 7)
    x = torch.randn(shape, dtype=dtype)
    directions = 2 if case.get("bidirectional") else 1
    h0 = torch.randn(case["num_layers"] * directions, batch, 11, dtype=dtype)
    state = (h0, torch.randn_like(h0)) if kind == "LSTM" else h0

    def on(device, value):
        if isinstance(value, tuple):
            return tuple(on(device, v) for v in value)
        return value.detach().to(device)

    expected = _run(cpu, x.clone().requires_grad_(), state)
    torch.maia.reset_fallback_counts()
    actual = _run(maia, on("maia", x).requires_grad_(), on("maia", state))
    assert torch.maia.fallback_counts() == {}
    for a, e in zip(actual, expected, strict=True):
        torch.testing.assert_close(a.cpu(), e)


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell"])
def test_cells_match_cpu(kind):
    torch.manual_seed(0)
    cls = getattr(torch.nn, kind)
    cpu, maia = cls(4, 6), cls(4, 6).to("maia")
    maia.load_state_dict(cpu.state_dict())
    x = torch.randn(2, 4)
    h = torch.randn(2, 6)
    state = (h, torch.randn(2, 6)) if kind == "LSTMCell" else h
    expected = cpu(x, state)
    actual = maia(x.to("maia"), tuple(s.to("maia") for s in state) if kind == "LSTMCell"
                  else state.to("maia"))
    for a, e in zip(actual if kind == "LSTMCell" else (actual,),
                    expected if kind == "LSTMCell" else (expected,)):
        torch.testing.assert_close(a.cpu(), e)


def test_mismatched_gates_are_refused():
    gates = torch.randn(2, 12, device="maia")
    with pytest.raises(RuntimeError, match=r"expected gates of shape \[batch, 4 \* 5\]"):
        torch.ops.aten._thnn_fused_lstm_cell(gates, gates, torch.randn(2, 5, device="maia"))
    with pytest.raises(RuntimeError, match="both be given or both be absent"):
        torch.ops.aten._thnn_fused_gru_cell(gates, gates, torch.randn(2, 4, device="maia"),
                                            torch.randn(12, device="maia"))
