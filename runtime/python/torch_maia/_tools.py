"""The compiler tools shipped in the wheel (docs/packaging.md).

An installed wheel has the binaries in torch_maia/bin; the console scripts
maia-compile and maia-opt (pyproject.toml) run them. The editable install of
the development set-up has no bin/: there the tools are in build/release/bin.
"""

import os
import sys
from pathlib import Path


def packaged_tool(name: str) -> Path | None:
    """torch_maia/bin/<name> of an installed wheel, or None if absent."""
    path = Path(__file__).resolve().parent / "bin" / name
    return path if os.access(path, os.X_OK) else None


def _run(name: str) -> None:
    path = packaged_tool(name)
    if path is None:
        sys.exit(f"{name}: not installed with torch_maia (expected in "
                 f"{Path(__file__).resolve().parent / 'bin'}); install the torch_maia wheel")
    os.execv(path, [name, *sys.argv[1:]])


def maia_compile() -> None:
    _run("maia-compile")


def maia_opt() -> None:
    _run("maia-opt")
