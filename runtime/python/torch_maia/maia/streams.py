"""torch.maia streams and events: torch.Stream / torch.Event on maia."""

import torch


class Stream(torch.Stream):
    """An in-order queue of work on a maia device."""

    def __new__(cls, device=None, priority=0, **kwargs):
        if "stream_id" in kwargs:  # rebuilding an existing stream
            return super().__new__(cls, **kwargs)
        from . import _index

        return super().__new__(cls, device=torch.device("maia", _index(device)),
                               priority=priority)

    @property
    def priority(self) -> int:
        """The stream's priority (lower runs first; torch.maia.Stream clamps
        it to the device's range)."""
        from .. import _C

        return _C._stream_priority(self.stream_id, self.device_index)


class Event(torch.Event):
    """A marker in a maia stream: record, wait, query, synchronize, time."""

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        return super().__new__(cls, device="maia", enable_timing=enable_timing,
                               blocking=blocking, interprocess=interprocess)

    def elapsed_time(self, end_event) -> float:
        """Milliseconds between this event's and end_event's recorded work."""
        from .. import _C

        return _C._event_elapsed_time(self.event_id, end_event.event_id)


def _wrap(stream: torch.Stream) -> Stream:
    return Stream(stream_id=stream.stream_id, device_index=stream.device_index,
                  device_type=stream.device_type)


def current_stream(device=None) -> Stream:
    from . import _index

    return _wrap(torch.accelerator.current_stream(torch.device("maia", _index(device))))


def default_stream(device=None) -> Stream:
    """The default stream of a maia device (stream id 0)."""
    current = current_stream(device)
    return Stream(stream_id=0, device_index=current.device_index,
                  device_type=current.device_type)


def set_stream(stream: torch.Stream) -> None:
    torch.accelerator.set_stream(stream)


class StreamContext:
    """Makes ``stream`` current, and its device the current device, for the
    duration of a block; restores both afterwards (as torch.cuda does)."""

    def __init__(self, stream):
        self.stream = stream
        self.previous_device = None
        self.previous_stream = None

    def __enter__(self):
        if self.stream is not None:
            from . import current_device

            self.previous_device = current_device()
            self.previous_stream = current_stream(self.stream.device_index)
            set_stream(self.stream)  # also makes the stream's device current
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            from . import set_device

            set_stream(self.previous_stream)
            set_device(self.previous_device)
        return False


def stream(stream) -> StreamContext:
    return StreamContext(stream)
