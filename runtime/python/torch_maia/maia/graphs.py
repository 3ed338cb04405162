"""torch.maia graphs: capture work once, replay it with one enqueue.

torch.accelerator.Graph works on maia through the GraphImplRegistry
(runtime/torch/csrc/MaiaGraph.cpp); these are the torch.cuda-style helpers
around it. See docs/torch.md, "Graphs".
"""

import gc
import itertools

import torch

# torch.cuda.CUDAGraph's counterpart: the device-generic graph class.
MaiaGraph = torch.accelerator.Graph

_pool_ids = itertools.count(1)


def is_current_stream_capturing() -> bool:
    """Whether the current maia stream is capturing a graph."""
    from . import current_stream

    return current_stream().is_capturing()


def graph_pool_handle() -> tuple[int, int]:
    """A memory pool id that graphs can share: ``MaiaGraph(pool=handle)`` or
    ``torch.maia.graph(g, pool=handle)``. Graphs sharing a pool must be
    replayed in the order they were captured."""
    return (0, next(_pool_ids))


class graph:
    """Context manager that captures the work of its body into ``maia_graph``
    (a ``torch.maia.MaiaGraph``), like ``torch.cuda.graph``.

    Arguments:
        maia_graph: the graph to capture into.
        pool: a pool id (``graph_pool_handle()`` or another graph's
            ``pool()``) to share memory with other graphs.
        stream: the stream to capture on; by default the current stream, or a
            side stream if that is the default stream (which cannot capture).
    """

    def __init__(self, maia_graph, pool=None, stream=None):
        self.maia_graph = maia_graph
        self.pool = pool
        self.stream = stream
        self._stream_context = None

    def __enter__(self):
        from . import empty_cache, stream, synchronize

        synchronize()
        gc.collect()
        empty_cache()
        if self.pool is not None:
            self.maia_graph.graph_pool = self.pool
        if self.stream is not None:
            self._stream_context = stream(self.stream)
            self._stream_context.__enter__()
        try:
            self.maia_graph.capture_begin()
        except BaseException:
            self._exit_stream()
            raise

    def __exit__(self, *exc):
        try:
            self.maia_graph.capture_end()
        finally:
            self._exit_stream()
        return False

    def _exit_stream(self):
        if self._stream_context is not None:
            self._stream_context.__exit__(None, None, None)
            self._stream_context = None


__all__ = ["MaiaGraph", "graph", "graph_pool_handle", "is_current_stream_capturing"]
