"""check_overlay.py DIR: fails unless `import torch` (which autoloads
torch_maia through its torch.backends entry point) loaded torch_maia._C from
the package overlay DIR of a non-release build (runtime/python/CMakeLists.txt),
i.e. the pytest suites of that build test its own, sanitized, extension."""

import os
import sys

import torch  # noqa: F401  (autoloads torch_maia)

torch_maia = sys.modules.get("torch_maia")
if torch_maia is None:
    sys.exit("import torch did not autoload torch_maia")
where = os.path.realpath(os.path.dirname(torch_maia._C.__file__))
expected = os.path.realpath(os.path.join(sys.argv[1], "torch_maia"))
print(f"torch_maia._C: {torch_maia._C.__file__}")
if where != expected:
    sys.exit(f"torch_maia._C was loaded from {where}, not from the overlay {expected}")
