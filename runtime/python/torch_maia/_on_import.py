"""Run a function right after a module is imported, without importing it.

torch_maia registers its Dynamo DeviceInterface this way: Dynamo has no
registry a PrivateUse1 backend can fill before Dynamo is imported, and
importing Dynamo eagerly would cost every `import torch` about two seconds.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from typing import Callable


class _RunAfterLoading(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, then: Callable[[], None]):
        self._loader = loader
        self._then = then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        self._then()


class _Watcher(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader the other finders return for
    one module name, once."""

    def __init__(self, name: str, then: Callable[[], None]):
        self._name = name
        self._then = then
        self._lock = threading.Lock()

    def find_spec(self, fullname, path, target=None):
        if fullname != self._name:
            return None
        with self._lock:
            if self not in sys.meta_path:
                return None
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(fullname, path, target) if hasattr(finder, "find_spec") \
                else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _RunAfterLoading(spec.loader, self._then)
                return spec
        return None


def after_import(name: str, then: Callable[[], None]) -> None:
    """Calls `then()` once `name` is imported: now if it already is."""
    if name in sys.modules:
        then()
    else:
        sys.meta_path.insert(0, _Watcher(name, then))
