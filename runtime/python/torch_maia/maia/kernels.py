"""User kernels: load a MAIA kernel binary compiled ahead of time
(``maia-compile kernel.mlir -o kernel.maiabin``) and launch its kernels on
maia tensors, on the current stream::

    module = torch.maia.load_module("kernel.maiabin")
    module.softmax(x, y, grid=(rows,))

Arguments are checked against the binary's metadata by the driver (count,
kinds, dtypes, ranks, static strides, device, bounds), with a clear error.
"""

import json

from .. import _C


class Kernel:
    """A kernel of a loaded module: call it with its arguments and a grid."""

    def __init__(self, module, name):
        self._module = module
        self.name = name

    def __call__(self, *args, grid):
        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        self._module._handle.launch(self.name, list(grid), list(args))

    def __repr__(self):
        return f"<maia kernel {self.name} of {self._module.path}>"


class Module:
    """A loaded kernel binary; its kernels are attributes."""

    def __init__(self, path):
        self._handle = _C._UserModule(str(path))
        self.path = str(path)
        self.kernels = {name: Kernel(self, name) for name in self._handle.kernel_names()}

    @property
    def metadata(self) -> dict:
        return json.loads(self._handle.metadata())

    def __getattr__(self, name):
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"{self.path} has no kernel {name!r}; its kernels: "
                             f"{', '.join(kernels) or '(none)'}")

    def __repr__(self):
        return f"<maia module {self.path}: {', '.join(self.kernels)}>"


def load_module(path) -> Module:
    """Loads a MAIA kernel binary (.maiabin)."""
    return Module(path)
