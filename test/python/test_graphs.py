"""Graph capture and replay on maia: torch.accelerator.Graph and the
torch.maia graph helpers (runtime/torch/csrc/MaiaGraph.cpp, driver graph.cpp)."""

import pytest
import torch

DEVICE = "maia"


def _static_inputs(*shapes, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(*shape, generator=generator).to(DEVICE) for shape in shapes]


class TestGraphs:
    def test_graph_class_is_available_on_maia(self):
        assert torch.accelerator.current_accelerator().type == DEVICE
        graph = torch.accelerator.Graph()
        assert isinstance(graph, torch.maia.MaiaGraph)

    def test_replay_of_eager_ops_matches_eager_after_inputs_change(self):
        x, y, w = _static_inputs((16, 32), (16, 32), (32, 8))
        graph = torch.accelerator.Graph()
        with graph:
            out = torch.matmul((x + y) * 0.5 - y.mul(x), w).relu()
        for seed in range(1, 6):
            new_x, new_y, new_w = _static_inputs((16, 32), (16, 32), (32, 8), seed=seed)
            x.copy_(new_x)
            y.copy_(new_y)
            w.copy_(new_w)
            graph.replay()
            expected = torch.matmul((new_x + new_y) * 0.5 - new_y.mul(new_x), new_w).relu()
            torch.testing.assert_close(out.cpu(), expected.cpu())

    def test_capture_records_work_without_running_it(self):
        x = torch.zeros(1000, device=DEVICE)
        graph = torch.accelerator.Graph()
        with graph:
            x.add_(1)
        assert x.cpu().sum().item() == 0, "captured work must not run at capture"
        for _ in range(100):
            graph.replay()
        assert torch.equal(x.cpu(), torch.full((1000,), 100.0))

    def test_mlp_forward_captured(self):
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128),
            torch.nn.GELU(), torch.nn.Linear(128, 10)).to(DEVICE)
        static_input = torch.zeros(8, 64, device=DEVICE)
        graph = torch.maia.MaiaGraph()
        with torch.no_grad():
            model(static_input)  # warm up (kernel loading) outside the capture
            with torch.maia.graph(graph):
                static_output = model(static_input)
            for step in range(5):
                batch = torch.randn(8, 64, device=DEVICE)
                static_input.copy_(batch)
                graph.replay()
                torch.testing.assert_close(static_output, model(batch), rtol=1e-5, atol=1e-5)

    def test_training_step_captured_matches_cpu(self):
        # Forward, backward and an SGD step in one graph (the loss is built
        # from native operators: a host-fallback loss could not be captured).
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)).to(DEVICE)
        reference = torch.nn.Sequential(
            torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
        reference.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)

        def loss_of(output, target):
            return ((output - target) ** 2).mean()

        x = torch.zeros(8, 16, device=DEVICE)
        y = torch.zeros(8, 1, device=DEVICE)
        graph = torch.maia.MaiaGraph()
        optimizer.zero_grad(set_to_none=True)
        with torch.maia.graph(graph):
            loss = loss_of(model(x), y)
            loss.backward()
            optimizer.step()
        generator = torch.Generator().manual_seed(1)
        for _ in range(4):
            batch = torch.randn(8, 16, generator=generator)
            target = torch.randn(8, 1, generator=generator)
            x.copy_(batch)
            y.copy_(target)
            graph.replay()
            reference_optimizer.zero_grad()
            reference_loss = loss_of(reference(batch), target)
            reference_loss.backward()
            reference_optimizer.step()
            torch.testing.assert_close(loss.cpu(), reference_loss.detach())
        for mine, theirs in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(mine.detach().cpu(), theirs.detach())

    def test_capture_switches_from_the_default_stream_and_back(self):
        default = torch.maia.default_stream()
        assert torch.maia.current_stream() == default
        assert not torch.maia.is_current_stream_capturing()
        graph = torch.accelerator.Graph()
        x = torch.ones(4, device=DEVICE)
        seen = {}
        with graph:
            seen["stream"] = torch.maia.current_stream()
            seen["capturing"] = torch.maia.is_current_stream_capturing()
            x.mul_(3)
        assert seen["stream"] != default and seen["capturing"]
        assert not seen["stream"].is_capturing()
        assert torch.maia.current_stream() == default
        assert not torch.maia.is_current_stream_capturing()

    def test_capture_on_a_user_stream(self):
        stream = torch.maia.Stream()
        x = torch.ones(4, device=DEVICE)
        torch.maia.synchronize()
        graph = torch.maia.MaiaGraph()
        with torch.maia.graph(graph, stream=stream):
            assert torch.maia.current_stream() == stream
            assert stream.is_capturing()
            x.add_(2)
        assert torch.maia.current_stream() == torch.maia.default_stream()
        graph.replay()
        graph.replay()
        assert torch.equal(x.cpu(), torch.full((4,), 5.0))

    def test_synchronize_during_capture_raises_and_invalidates(self):
        x = torch.ones(4, device=DEVICE)
        graph = torch.accelerator.Graph()
        torch.maia.synchronize()
        graph.capture_begin()
        x.add_(1)
        with pytest.raises(RuntimeError, match="not allowed while stream .* captures a graph"):
            torch.maia.synchronize()
        with pytest.raises(RuntimeError, match="invalidated"):
            x.add_(1)
        with pytest.raises(RuntimeError, match="invalidated by synchronizing its device"):
            graph.capture_end()
        assert not torch.maia.is_current_stream_capturing()
        assert torch.maia.current_stream() == torch.maia.default_stream()
        assert torch.equal(x.cpu(), torch.ones(4)), "nothing captured ran"
        # The graph can capture again after reset.
        graph.reset()
        with graph:
            x.add_(1)
        graph.replay()
        assert torch.equal(x.cpu(), torch.full((4,), 2.0))

    def test_reading_a_tensor_on_the_host_during_capture_raises(self):
        x = torch.ones(4, device=DEVICE)
        graph = torch.accelerator.Graph()
        with pytest.raises(RuntimeError, match="copy with pageable host memory") as raised:
            with graph:
                (x * 2).sum().item()
        # .item() raised first; capture_end then reported the invalidation.
        assert "captures a graph" in str(raised.value.__context__)
        assert not torch.maia.is_current_stream_capturing()

    def test_captured_memory_is_kept_and_not_handed_out_after_capture(self):
        x = torch.arange(1024, dtype=torch.float32, device=DEVICE)
        stream = torch.maia.Stream()
        graph = torch.maia.MaiaGraph()
        with torch.maia.graph(graph, stream=stream):
            tmp = x * 2  # freed inside the capture: its block may serve `out`
            out = tmp + 1
            del tmp
        assert graph.pool() != (0, 0)
        graph.replay()
        assert torch.equal(out.cpu(), torch.arange(1024, dtype=torch.float32) * 2 + 1)
        # Even with every captured tensor dropped, replays write the pool's
        # blocks: allocations after the capture, even on the stream that
        # captured, must never get them.
        del out
        with torch.maia.stream(stream):
            others = [torch.full((1024,), -7.0, device=DEVICE) for _ in range(8)]
        torch.maia.synchronize()
        graph.replay()
        for other in others:
            assert torch.equal(other.cpu(), torch.full((1024,), -7.0))
        # Once the graph is gone, empty_cache gives the pool's memory back.
        reserved = torch.maia.memory_reserved()
        graph.reset()
        torch.maia.empty_cache()
        assert torch.maia.memory_reserved() < reserved

    def test_graphs_can_share_a_pool(self):
        handle = torch.maia.graph_pool_handle()
        x = torch.ones(256, device=DEVICE)
        first, second = torch.maia.MaiaGraph(), torch.maia.MaiaGraph()
        with torch.maia.graph(first, pool=handle):
            y = x + 1
        with torch.maia.graph(second, pool=handle):
            z = y * 3
        assert first.pool() == second.pool() == handle
        x.fill_(2)
        first.replay()
        second.replay()
        assert torch.equal(z.cpu(), torch.full((256,), 9.0))

    def test_keep_graph_instantiates_on_first_replay(self):
        x = torch.zeros(8, device=DEVICE)
        graph = torch.accelerator.Graph(keep_graph=True)
        with graph:
            x.add_(1)
        graph.replay()
        graph.instantiate()  # again: a fresh executable, same graph
        graph.replay()
        assert torch.equal(x.cpu(), torch.full((8,), 2.0))

    def test_misuse_raises_clear_errors(self):
        graph = torch.accelerator.Graph()
        with pytest.raises(RuntimeError, match="not capturing"):
            graph.capture_end()
        with pytest.raises(RuntimeError, match="has not captured anything"):
            graph.replay()
        with graph:
            pass
        with pytest.raises(RuntimeError, match="reset\\(\\) before capturing again"):
            graph.capture_begin()
        graph.replay()  # an empty graph is a no-op
        with pytest.raises(RuntimeError, match="debug_dump is not supported"):
            graph.debug_dump("/dev/null")

    def test_a_second_capture_on_the_device_is_refused_and_leaves_the_stream(self):
        first, second = torch.maia.MaiaGraph(), torch.maia.MaiaGraph()
        x = torch.zeros(4, device=DEVICE)
        stream = torch.maia.Stream()
        torch.maia.synchronize()
        with torch.maia.stream(stream):
            first.capture_begin()
            x.add_(1)
            default = torch.maia.default_stream()
            with torch.maia.stream(default):
                # From the default stream, capture_begin would switch streams.
                for _ in range(40):  # the pool wraps: its capturing stream comes round
                    with pytest.raises(RuntimeError, match="already capturing a graph"):
                        second.capture_begin()
                    assert torch.maia.current_stream() == default
            first.capture_end()
        first.replay()
        assert torch.equal(x.cpu(), torch.ones(4))
