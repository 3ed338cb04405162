"""torch.compile(mode="reduce-overhead") on maia: a compiled graph replayed
from a maia graph.

Inductor's own CUDA graph path (cudagraph trees) is CUDA-only: it skips every
graph whose device is not "cuda" (docs/inductor.md, "reduce-overhead"). So
the plugin's wrapper ends a graph compiled with `triton.cudagraphs` (which is
what mode="reduce-overhead" sets) with `call = GraphedCall(call, ...)`, and
this class does the rest at run time:

- one captured graph per input signature: the addresses of the static
  inputs, and for graphs with dynamic shapes also every input's sizes and
  strides and the integer inputs (Dynamo's guards fix the rest);
- the first call of a signature runs the compiled code directly (warm-up),
  then captures it into a private memory pool, with every non-static input
  read from a buffer of the graph (static inputs, parameters and buffers of
  modules, are captured where they are);
- later calls copy the inputs into those buffers (unless the caller passes
  the buffers themselves), replay the graph with one driver enqueue, copy
  mutated inputs back and return copies of the outputs: a caller owns what it
  gets, as in default mode, so outputs survive later calls (training saves
  forward outputs for a backward that can come after the next forward);
  with static shapes and plain outputs, that whole step is one C++ call
  (torch_maia._C._GraphReplayer), the Python below the general case;
- anything the capture cannot hold (a host read, a host fallback operator,
  random numbers, CPU tensors) makes the function run without graphs from
  then on, with the reason logged once.

Kept free of Inductor imports, like runtime.py: cached graphs load this.
"""

from __future__ import annotations

import logging
import operator
import os
import weakref
from dataclasses import dataclass, field

import torch
from torch_maia import _C

log = logging.getLogger(__name__)


@dataclass
class GraphStats:
    """What reduce-overhead did in this process (tests and tools read it)."""

    warmups: int = 0
    captures: int = 0
    replays: int = 0
    # Calls run without graphs by functions that gave graphs up at run time
    # (those decided at compile time are not wrapped at all).
    eager_calls: int = 0
    fallbacks: list = field(default_factory=list)  # (function, reason)

    def reset(self) -> None:
        self.warmups = self.captures = self.replays = self.eager_calls = 0
        self.fallbacks.clear()


stats = GraphStats()
_live: weakref.WeakSet = weakref.WeakSet()
# Replays of graphs captured from now on take the C++ path where it applies
# (_Captured.fast); off, every replay runs the Python path (for debugging).
cpp_replay: bool = os.environ.get("MAIA_INDUCTOR_CPP_REPLAY", "1") != "0"


def reset() -> None:
    """Drops every captured graph (their pools, buffers and outputs) of
    every compiled function; they capture again at their next call.
    Inductor keeps loaded graph modules, and with them their captured graphs,
    after torch._dynamo.reset(): call this to give that memory back."""
    for graphed in list(_live):
        graphed.graphs.clear()
        graphed.static = None
        graphed.disabled = None
        graphed._fast = None


def graphs_skipped(name: str, reason: str) -> None:
    """Called when a compiled graph's module loads and the graph cannot use
    maia graphs (decided at compile time): logged on every load, so a graph
    from the cache says so too."""
    stats.fallbacks.append((name, reason))
    log.warning("maia reduce-overhead: %s runs without graphs: %s", name, reason)


def _is_static(value: torch.Tensor) -> bool:
    # Parameters, and the buffers Dynamo marks, keep their storage between
    # calls: captured in place, never copied.
    return isinstance(value, torch.nn.Parameter) or hasattr(value, "_dynamo_static_input_type")


def _dense_view(tensor: torch.Tensor) -> torch.Tensor:
    """The elements of `tensor` once each: broadcast (stride 0) dimensions
    narrowed to one, so that a copy into it is legal."""
    for dim, stride in enumerate(tensor.stride()):
        if stride == 0 and tensor.size(dim) > 1:
            tensor = tensor.narrow(dim, 0, 1)
    return tensor


def _copy_into(dst: torch.Tensor, src: torch.Tensor) -> None:
    if 0 in dst.stride():
        _dense_view(dst).copy_(_dense_view(src))
    else:
        dst.copy_(src)


class _Captured:
    """One captured graph of a GraphedCall: its input buffers, outputs and
    how each output goes back to the caller."""

    __slots__ = ("graph", "args", "copied", "copies", "broadcast", "outputs", "plan",
                 "all_clones", "fast")

    def __init__(self, graph, args, copied, outputs, plan, mutated_inputs=()):
        self.graph = graph
        self.args = args  # what the capture read: buffers and static inputs
        self.copied = copied  # indices of inputs copied into buffers
        self.copies = tuple((index, args[index]) for index in copied)
        # Some input has broadcast (stride 0) dimensions: copies need _copy_into.
        self.broadcast = any(0 in args[index].stride() for index in copied)
        self.outputs = outputs
        # Per output: ("clone", None) a dense tensor of the pool, cloned;
        # ("storage", None) pool memory shared with other outputs or not
        # dense: its storage copied once, the view rebuilt on the copy;
        # ("input", i) a view of input i, rebuilt on the caller's tensor;
        # ("keep", None) returned as is (views of static inputs, numbers).
        self.plan = plan
        self.all_clones = all(kind == "clone" for kind, _ in plan)
        # The whole replay in C++ (torch_maia._C._GraphReplayer) when the
        # outputs are plain clones and the copies plain copies: what most
        # graphs are. It checks the static inputs' addresses itself.
        self.fast = None
        if cpp_replay and self.all_clones and not self.broadcast:
            static = [(index, value.data_ptr()) for index, value in enumerate(args)
                      if isinstance(value, torch.Tensor) and index not in copied]
            self.fast = _C._GraphReplayer(
                graph, static, list(self.copies),
                [index for index in mutated_inputs if index in copied], list(outputs))


class GraphedCall:
    """A compiled graph's `call(args)` that replays maia graphs.

    `dynamic`: the graph has symbolic sizes, so one compiled graph sees many
    input sizes (a captured graph per concrete signature). Otherwise Dynamo's
    guards and the wrapper's size asserts fix every size, stride and dtype,
    and a signature is only the addresses of the static inputs.
    """

    def __init__(self, call, name: str, mutated_inputs=(), dynamic: bool = True,
                 rerecord_limit: int = 128):
        self.call = call
        self.name = name
        self.mutated_inputs = tuple(mutated_inputs)
        self.dynamic = dynamic
        self.rerecord_limit = rerecord_limit
        self.graphs: dict = {}
        self.disabled: str | None = None
        # Decided at the first call: inputs captured where they are (their
        # address is part of the signature) and inputs copied into buffers.
        self.static: tuple | None = None
        self.copied: tuple = ()
        self._static_of = None  # args -> the static inputs, a tuple
        # With static shapes, the C++ replay of the graph replayed last: it
        # returns None when the static inputs moved (then the lookup below).
        self._fast = None
        _live.add(self)

    def __call__(self, args: list):
        fast = self._fast
        if fast is not None:
            try:
                results = fast(args)
            except RuntimeError:
                # Called inside the caller's own capture: the general path
                # runs the compiled code into it. Any other error stands.
                if not torch.maia.is_current_stream_capturing():
                    raise
                results = None
            if results is not None:
                stats.replays += 1
                return results
        if self.disabled is None:
            if self.static is None:
                self._classify(args)
            if self.disabled is None:
                key = self._key(args)
                captured = self.graphs.get(key)
                if captured is not None:
                    if not self.dynamic:
                        self._fast = captured.fast
                    return self._replay(captured, args)
                return self._warm_up_and_capture(key, args)
        stats.eager_calls += 1
        return self.call(args)

    # -- signatures --------------------------------------------------------

    def _classify(self, args) -> None:
        reason = _unsupported_input(args)
        if reason is not None:
            self._disable(reason)
            return
        tensors = [index for index, value in enumerate(args) if isinstance(value, torch.Tensor)]
        self.static = tuple(index for index in tensors if _is_static(args[index]))
        self.copied = tuple(index for index in tensors if index not in self.static)
        if len(self.static) == 1:
            only = self.static[0]
            self._static_of = lambda values: (values[only],)
        elif self.static:
            self._static_of = operator.itemgetter(*self.static)

    def _key(self, args) -> tuple:
        addresses = tuple([tensor.data_ptr() for tensor in self._static_of(args)]) \
            if self.static else ()
        if not self.dynamic:
            return addresses
        sizes = tuple([(value.shape, value.stride()) if isinstance(value, torch.Tensor) else value
                       for value in args])
        return addresses, sizes

    def _disable(self, reason: str) -> None:
        self.disabled = reason
        self.graphs.clear()
        self._fast = None
        stats.fallbacks.append((self.name, reason))
        log.warning("maia reduce-overhead: %s runs without graphs from now on: %s",
                    self.name, reason)

    # -- first call of a signature ----------------------------------------

    def _warm_up_and_capture(self, key, args: list):
        if torch.maia.is_current_stream_capturing():
            # Inside the caller's own capture: run into it, capture nothing.
            return self.call(args)
        inputs = list(args)
        reason = _unsupported_input(inputs)
        if reason is None and len(self.graphs) >= self.rerecord_limit:
            reason = (f"{len(self.graphs)} graphs captured already (one per input signature; "
                      "torch._inductor.config.triton.cudagraph_unexpected_rerecord_limit)")
        if reason is not None:
            self._disable(reason)
            stats.eager_calls += 1
            return self.call(args)

        # The warm-up is the call's real run; it also loads what runs lazily
        # and tells whether the graph draws random numbers, which a replay
        # would repeat.
        rng_before = _rng_states()
        fallbacks_before = torch.maia.fallback_counts()
        outputs = self.call(args)
        stats.warmups += 1
        if _rng_states() != rng_before:
            self._disable("the graph draws random numbers (every replay would draw the same ones)")
            return outputs
        on_host = _new_fallbacks(fallbacks_before)
        if on_host:
            # Their copies to the host would invalidate the capture.
            self._disable(f"host fallback operators run in the graph: {', '.join(on_host)} (no "
                          "maia kernel; they copy to the host, which a capture cannot hold)")
            return outputs
        try:
            self.graphs[key] = self._capture(inputs)
            stats.captures += 1
        except RuntimeError as error:
            self._disable(f"capture failed: {_first_line(error)}")
        return outputs

    def _capture(self, inputs: list) -> _Captured:
        device = next(value.device for value in inputs
                      if isinstance(value, torch.Tensor)) if any(
            isinstance(value, torch.Tensor) for value in inputs) else torch.device("maia")
        args = list(inputs)
        copied = self.copied
        for index in copied:
            value = inputs[index]
            buffer = torch.empty_strided(value.size(), value.stride(), dtype=value.dtype,
                                         device=value.device)
            _copy_into(buffer, value)
            args[index] = buffer
        graph = torch.maia.MaiaGraph()
        with torch.maia.device(device):
            try:
                with torch.maia.graph(graph):
                    outputs = self.call(list(args))
            except BaseException:
                graph.reset()
                raise
        return _Captured(graph, args, copied, outputs, self._plan(args, copied, outputs),
                         self.mutated_inputs)

    @staticmethod
    def _plan(args, copied, outputs) -> tuple:
        buffers = {args[index].untyped_storage().data_ptr(): index for index in copied}
        static = {value.untyped_storage().data_ptr() for index, value in enumerate(args)
                  if isinstance(value, torch.Tensor) and index not in copied}
        sharing: dict = {}
        for output in outputs:
            if isinstance(output, torch.Tensor):
                storage = output.untyped_storage().data_ptr()
                sharing[storage] = sharing.get(storage, 0) + 1
        plan = []
        for output in outputs:
            if not isinstance(output, torch.Tensor):
                plan.append(("keep", None))
                continue
            storage = output.untyped_storage().data_ptr()
            if storage in buffers:
                plan.append(("input", buffers[storage]))
            elif storage in static:
                plan.append(("keep", None))
            elif (sharing[storage] == 1 and output.storage_offset() == 0
                  and output.is_contiguous()
                  and output.untyped_storage().nbytes() == output.numel() * output.element_size()):
                plan.append(("clone", None))
            else:
                plan.append(("storage", None))
        return tuple(plan)

    # -- replay -------------------------------------------------------------

    def _replay(self, captured: _Captured, args: list):
        buffers = captured.args
        for index, buffer in captured.copies:
            value = args[index]
            if value.data_ptr() != buffer.data_ptr():
                if captured.broadcast:
                    _copy_into(buffer, value)
                else:
                    buffer.copy_(value)
        try:
            captured.graph.replay()
        except RuntimeError:
            if not torch.maia.is_current_stream_capturing():
                raise
            # Called inside the caller's own capture (a graph cannot launch
            # into one): the compiled code becomes part of that capture.
            return self.call(args)
        stats.replays += 1
        for index in self.mutated_inputs:
            value = args[index]
            if index in captured.copied and value.data_ptr() != buffers[index].data_ptr():
                _copy_into(value, buffers[index])
        if captured.all_clones:
            results = [output.clone() for output in captured.outputs]
        else:
            results = _give_back(captured, args)
        args.clear()
        return results


def _give_back(captured: _Captured, args: list):
    """The outputs the caller owns: pool memory copied (outputs sharing a
    storage keep sharing one), views of copied inputs rebuilt on the caller's
    inputs."""
    results = []
    storages: dict = {}
    for output, (kind, index) in zip(captured.outputs, captured.plan):
        if kind == "keep":
            results.append(output)
        elif kind == "input":
            source = args[index]
            buffer = captured.args[index]
            offset = source.storage_offset() + output.storage_offset() - buffer.storage_offset()
            results.append(source.as_strided(output.size(), output.stride(), offset))
        elif kind == "clone":
            results.append(output.clone())
        else:
            storage = output.untyped_storage()
            copy = storages.get(storage.data_ptr())
            if copy is None:
                copy = storages[storage.data_ptr()] = _copy_storage(storage, output.device)
            results.append(torch.empty(0, dtype=output.dtype, device=output.device).set_(
                copy, output.storage_offset(), output.size(), output.stride()))
    return results


def _copy_storage(storage, device):
    source = torch.empty(0, dtype=torch.uint8, device=device).set_(storage)
    return source.clone().untyped_storage()


def _unsupported_input(args) -> str | None:
    for index, value in enumerate(args):
        if isinstance(value, torch.Tensor):
            if value.device.type != "maia":
                return (f"input {index} is a {value.device.type} tensor (its value would be "
                        "read on the host once, at capture)")
        elif not isinstance(value, (int, float, bool, torch.SymInt)) and value is not None:
            return f"input {index} is a {type(value).__name__}, not a tensor or a number"
    return None


def _new_fallbacks(before: dict) -> list:
    """Operators that ran on the host fallback since `before` was counted."""
    return sorted(name for name, count in torch.maia.fallback_counts().items()
                  if count > before.get(name, 0))


def _rng_states() -> tuple:
    states = [torch.get_rng_state()]
    for index in range(torch.maia.device_count()):
        states.append(torch.maia.get_rng_state(index))
    return tuple(bytes(state.numpy()) for state in states)


def _first_line(error: BaseException) -> str:
    # The operator that broke the capture raised first; capture_end's error
    # (the capture was invalidated) comes after it, with it as its context.
    while isinstance(error.__context__, RuntimeError):
        error = error.__context__
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
