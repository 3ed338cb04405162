"""torch.compile(mode="reduce-overhead") on maia: compiled graphs captured
into maia graphs and replayed (maia_inductor/graphs.py, graph_capture.py),
against eager CPU."""

import copy
import logging
import sys
from pathlib import Path

import pytest
import torch

from maia_inductor import graphs
from maia_inductor.graphs import stats
from maia_inductor.runtime import MaiaCompiledKernel
from torch_maia import _C

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "bench"))
import model_zoo  # noqa: E402

RO = "reduce-overhead"


@pytest.fixture(autouse=True)
def _fresh_stats():
    stats.reset()
    yield
    graphs.reset()


def _close(actual, expected, atol=1e-4, rtol=1e-4):
    torch.testing.assert_close(actual.cpu(), expected, atol=atol, rtol=rtol)


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64),
        torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))


@pytest.fixture(params=[True, False], ids=["cpp_replay", "python_replay"])
def replay_path(request, monkeypatch):
    """Runs a test with replays on the C++ path where it applies, and on
    the Python path only."""
    monkeypatch.setattr(graphs, "cpp_replay", request.param)
    return request.param


def test_mlp_replays_match_cpu_while_inputs_change(replay_path):
    model = _mlp()
    compiled = torch.compile(copy.deepcopy(model).to("maia"), mode=RO)
    batches = [torch.randn(4, 32) for _ in range(6)]
    outputs = []
    with torch.no_grad():
        for step, batch in enumerate(batches):
            outputs.append(compiled(batch.to("maia")))
            if step == 0:
                launches = MaiaCompiledKernel.launches
        # Replays run the kernels without the wrapper launching any.
        assert MaiaCompiledKernel.launches == launches
        assert (stats.warmups, stats.captures, stats.replays) == (1, 1, 5)
        assert stats.fallbacks == []
        # Every output is the caller's: later replays did not overwrite it.
        for output, batch in zip(outputs, batches):
            _close(output, model(batch))
    assert len({output.data_ptr() for output in outputs}) == len(outputs)


def test_transformer_block_replays_match_cpu(replay_path):
    model, (example,) = model_zoo.build("gpt2_block")
    model.eval()
    compiled = torch.compile(copy.deepcopy(model).to("maia"), mode=RO)
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn_like(example)
            _close(compiled(x.to("maia")), model(x), atol=2e-4, rtol=2e-4)
    assert stats.captures == 1 and stats.replays == 3
    assert stats.fallbacks == []


def test_static_shape_replays_take_the_cpp_path(replay_path):
    model = _mlp()
    compiled = torch.compile(copy.deepcopy(model).to("maia"), mode=RO)
    with torch.no_grad():
        for _ in range(2):
            compiled(torch.randn(4, 32, device="maia"))
        (graphed,) = [graphed for graphed in graphs._live if graphed.graphs]
        assert (graphed._fast is not None) == replay_path
        x = torch.randn(4, 32)
        _close(compiled(x.to("maia")), model(x))
    assert stats.replays == 2


def _captured_product(mutate=False):
    """A graph over a buffer and a weight, captured by hand: buffer * weight,
    or with mutate, buffer doubled in place and buffer + weight."""
    weight = torch.randn(16, device="maia")
    buffer = torch.empty(16, device="maia")
    graph = torch.maia.MaiaGraph()
    with torch.maia.graph(graph):
        if mutate:
            buffer.mul_(2)
            output = buffer + weight
        else:
            output = buffer * weight
    return graph, buffer, weight, output


def test_the_cpp_replay_copies_inputs_in_and_returns_clones():
    graph, buffer, weight, output = _captured_product()
    replay = _C._GraphReplayer(graph, [(1, weight.data_ptr())], [(0, buffer)], [], [output])
    results = []
    for _ in range(3):
        x = torch.randn(16)
        args = [x.to("maia"), weight]
        (result,) = replay(args)
        assert args == []  # the compiled call's convention: the callee clears them
        results.append((result, x * weight.cpu()))
    for result, expected in results:
        _close(result, expected)
        assert result.data_ptr() != output.data_ptr()


def test_the_cpp_replay_writes_mutated_inputs_back():
    graph, buffer, weight, output = _captured_product(mutate=True)
    replay = _C._GraphReplayer(graph, [(1, weight.data_ptr())], [(0, buffer)], [0], [output])
    x = torch.randn(16)
    x_maia = x.to("maia")
    (result,) = replay([x_maia, weight])
    _close(x_maia, x * 2)
    _close(result, x * 2 + weight.cpu())


def test_the_cpp_replay_declines_inputs_the_capture_did_not_see():
    graph, buffer, weight, output = _captured_product()
    replay = _C._GraphReplayer(graph, [(1, weight.data_ptr())], [(0, buffer)], [], [output])
    x = torch.randn(16, device="maia")
    declined = ([x, weight.clone()], [x[:8], weight], [x.double(), weight], [3, weight], [x],
                [x.view(4, 4), weight])
    for args in declined:
        before = list(args)
        assert replay(args) is None
        assert len(args) == len(before)  # left to the general path


def test_new_shapes_capture_a_graph_each_and_replay_it():
    def fn(x, w):
        return torch.tanh(x @ w) * x.sum(dim=1, keepdim=True)

    w = torch.randn(16, 16)
    compiled = torch.compile(fn, mode=RO, dynamic=True)
    for rows in [8, 4, 8, 4, 12, 8]:
        x = torch.randn(rows, 16)
        _close(compiled(x.to("maia"), w.to("maia")), fn(x, w))
    # One compiled graph (dynamic shapes), one captured graph per size.
    assert stats.captures == 3
    assert stats.replays == 3
    assert stats.fallbacks == []


def test_broadcast_inputs_are_copied_once_per_element():
    def fn(x, y):
        return x * y + 1

    compiled = torch.compile(fn, mode=RO)
    for _ in range(4):
        column, y = torch.randn(6, 1), torch.randn(6, 8)
        x_maia = column.to("maia").expand(6, 8)
        assert x_maia.stride() == (1, 0)
        _close(compiled(x_maia, y.to("maia")), fn(column.expand(6, 8), y))
    assert stats.replays == 3


def test_a_mutated_input_is_written_back_on_every_replay(replay_path):
    def fn(x, y):
        x.mul_(2)
        return x + y

    compiled = torch.compile(fn, mode=RO)
    for _ in range(4):
        x, y = torch.randn(64), torch.randn(64)
        x_maia = x.to("maia")
        result = compiled(x_maia, y.to("maia"))
        expected = fn(x, y)
        _close(result, expected)
        _close(x_maia, x)
    assert stats.replays == 3


def test_outputs_that_view_an_input_stay_views_of_the_callers_tensor():
    def fn(x):
        return x[1:].t(), (x * 3).sum()

    compiled = torch.compile(fn, mode=RO)
    for _ in range(3):
        x = torch.randn(5, 4).to("maia")
        view, total = compiled(x)
        assert view.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        x.add_(1)
        _close(view, x.cpu()[1:].t())
        _close(total, (x.cpu() - 1).mul(3).sum())


def test_an_uncapturable_operator_falls_back_with_a_logged_reason(caplog):
    # The general eigenvalues (LAPACK's geev) run on the host fallback,
    # which copies to the host: a capture cannot hold that.
    def fn(x):
        return torch.linalg.eigvals(x @ x.mT).abs() * 2 + 1

    compiled = torch.compile(fn, mode=RO)
    with caplog.at_level(logging.WARNING, logger="maia_inductor.graphs"):
        for _ in range(3):
            x = torch.randn(4, 16)
            _close(compiled(x.to("maia")), fn(x))
    assert stats.captures == 0 and stats.replays == 0
    assert stats.eager_calls == 2
    assert len(stats.fallbacks) == 1
    assert ("host fallback operators run in the graph: aten::linalg_eig"
            in stats.fallbacks[0][1])
    assert "runs without graphs" in caplog.text


@torch.library.custom_op("maia_reduce_overhead_test::scale_by_host_max", mutates_args=())
def _scale_by_host_max(x: torch.Tensor) -> torch.Tensor:
    return x / float(x.abs().max().cpu())


@_scale_by_host_max.register_fake
def _(x):
    return torch.empty_like(x)


def test_a_capture_that_fails_falls_back_with_the_operators_error():
    # An operator that reads a value on the host: its copy to the host
    # invalidates the capture, which is dropped.
    def fn(x):
        return _scale_by_host_max(x + 1) * 2

    compiled = torch.compile(fn, mode=RO)
    for _ in range(3):
        x = torch.randn(32)
        _close(compiled(x.to("maia")), fn(x))
    assert stats.warmups == 1 and stats.captures == 0 and stats.eager_calls == 2
    reason = stats.fallbacks[0][1]
    assert reason.startswith("capture failed:") and "pageable host memory" in reason
    assert not torch.maia.is_current_stream_capturing()


def test_a_data_dependent_shape_is_found_at_compile_time(caplog):
    # nonzero's output size is read on the host from the device.
    def fn(x):
        return torch.nonzero(x > 0).sum(0) + 1

    compiled = torch.compile(fn, mode=RO)
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True), \
            caplog.at_level(logging.WARNING, logger="maia_inductor.graphs"):
        for _ in range(3):
            x = torch.randn(16)
            assert torch.equal(compiled(x.to("maia")).cpu(), fn(x))
    assert stats.warmups == 0 and stats.replays == 0
    assert len(stats.fallbacks) == 1 and "nonzero" in stats.fallbacks[0][1]
    assert "nonzero" in caplog.text


def test_random_numbers_are_not_replayed():
    def fn(x):
        return torch.nn.functional.dropout(x, 0.5, training=True) + 1

    compiled = torch.compile(fn, mode=RO)
    x = torch.ones(4096, device="maia")
    results = [compiled(x).cpu() for _ in range(3)]
    assert not torch.equal(results[1], results[2])
    assert stats.replays == 0
    assert "random numbers" in stats.fallbacks[0][1]


def test_a_cpu_tensor_input_falls_back():
    def fn(x, scale):
        return x * scale

    compiled = torch.compile(fn, mode=RO)
    x = torch.randn(16)
    for value in [2.0, 3.0]:
        scale = torch.tensor(value)
        _close(compiled(x.to("maia"), scale), x * value)
    assert stats.replays == 0
    assert "cpu tensors" in " ".join(reason for _, reason in stats.fallbacks)


def test_graph_breaks_capture_each_graph():
    def fn(x):
        y = torch.relu(x) + 1
        torch._dynamo.graph_break()
        return y * x.mean()

    compiled = torch.compile(fn, mode=RO)
    for _ in range(3):
        x = torch.randn(32)
        _close(compiled(x.to("maia")), fn(x))
    assert stats.captures == 2 and stats.replays == 4


def test_training_forward_and_backward_replay():
    model = _mlp()
    maia_model = copy.deepcopy(model).to("maia")
    compiled = torch.compile(maia_model, mode=RO)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    maia_optimizer = torch.optim.SGD(maia_model.parameters(), lr=0.1)
    torch.manual_seed(1)
    for _ in range(4):
        x, target = torch.randn(8, 32), torch.randn(8, 8)
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        maia_loss = torch.nn.functional.mse_loss(compiled(x.to("maia")), target.to("maia"))
        maia_loss.backward()
        maia_optimizer.step()
        maia_optimizer.zero_grad()
        _close(maia_loss, loss)
    for parameter, maia_parameter in zip(model.parameters(), maia_model.parameters()):
        _close(maia_parameter.detach(), parameter.detach())
    # Forward and backward each: a warm-up and a capture, then replays.
    assert stats.captures == 2 and stats.replays == 6
    assert stats.fallbacks == []


@pytest.mark.parametrize("optimizer_name", ["sgd", "adam"])
def test_compiled_training_step_with_optimizer(optimizer_name):
    model = _mlp()
    maia_model = copy.deepcopy(model).to("maia")

    def make_step(module):
        if optimizer_name == "sgd":
            optimizer = torch.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)
        else:
            optimizer = torch.optim.Adam(module.parameters(), lr=1e-3)

        def step(x, target):
            optimizer.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(module(x), target)
            loss.backward()
            optimizer.step()
            return loss
        return step

    step, maia_step = make_step(model), torch.compile(make_step(maia_model), mode=RO)
    torch.manual_seed(2)
    for _ in range(4):
        x, target = torch.randn(8, 32), torch.randn(8, 8)
        _close(maia_step(x.to("maia"), target.to("maia")), step(x, target))
    for parameter, maia_parameter in zip(model.parameters(), maia_model.parameters()):
        _close(maia_parameter.detach(), parameter.detach())
    assert stats.replays > 0
    reasons = [reason for _, reason in stats.fallbacks]
    if optimizer_name == "sgd":
        # Momentum buffers are static inputs, updated in place by replays.
        assert reasons == []
    else:
        # Adam's step counts are CPU tensors: its update runs without graphs.
        assert len(reasons) == 1 and "cpu tensors" in reasons[0]


def test_a_compiled_function_called_inside_a_users_capture_joins_it():
    def fn(x):
        return torch.relu(x) * 3 - 1

    compiled = torch.compile(fn, mode=RO)
    static_x = torch.randn(128).to("maia")
    compiled(static_x)
    compiled(static_x)
    assert stats.captures == 1 and stats.replays == 1
    for _ in range(2):  # replaying path, then (fresh function) first-call path
        user_graph = torch.maia.MaiaGraph()
        with torch.maia.graph(user_graph):
            static_y = compiled(static_x)
        for _ in range(3):
            x = torch.randn(128)
            static_x.copy_(x)
            user_graph.replay()
            _close(static_y, fn(x))
        torch._dynamo.reset()
        compiled = torch.compile(fn, mode=RO)
    assert stats.fallbacks == []


def _wrapper_sources(fn, *args, **options):
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    result, sources = run_and_get_code(torch.compile(fn, **options), *args)
    return result, sources


def test_default_mode_captures_nothing_and_generates_no_graph_code():
    model = _mlp()
    maia_model = copy.deepcopy(model).to("maia")
    with torch.no_grad():
        x = torch.randn(4, 32)
        result, sources = _wrapper_sources(maia_model, x.to("maia"))
        _close(result, model(x))
        assert sources and not any("GraphedCall" in source for source in sources)
        compiled = torch.compile(maia_model)
        for _ in range(3):
            x = torch.randn(4, 32)
            _close(compiled(x.to("maia")), model(x))
        _, sources = _wrapper_sources(maia_model, x.to("maia"), mode=RO)
        assert any("call = GraphedCall(call" in source for source in sources)
    assert stats.captures == 1 and stats.replays == 0


def test_reset_drops_captured_graphs_and_they_capture_again():
    def fn(x):
        return torch.sigmoid(x) * 2

    compiled = torch.compile(fn, mode=RO)
    x = torch.randn(64)
    for _ in range(2):
        compiled(x.to("maia"))
    assert stats.captures == 1 and stats.replays == 1
    graphs.reset()
    for _ in range(2):
        _close(compiled(x.to("maia")), fn(x))
    assert stats.captures == 2 and stats.replays == 2
