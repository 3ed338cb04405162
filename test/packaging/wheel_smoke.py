"""The installed torch_maia wheel, smoke-tested (packaging.wheel, wheel_test.sh).

Run by the venv's Python from a directory outside the checkout, with
softmax.mlir beside it: `import torch` alone finds maia; eager ops, a
torch.compile'd function (also with cpp_wrapper) and a user kernel (compiled by the installed
maia-compile console script, loaded with torch.maia.load_module) match the
CPU; maia-opt runs; and nothing this process or its compiler workers
loaded comes from the checkout (argv[1]), which also holds the build trees
and the project's venv.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

checkout = os.path.realpath(sys.argv[1])
prefix = os.path.realpath(sys.prefix)


def under(path: str, directory: str) -> bool:
    return os.path.commonpath([os.path.realpath(path), directory]) == directory


import torch  # noqa: E402  (after the paths: the check covers what torch loads)

assert hasattr(torch, "maia"), "import torch did not load the maia backend"
assert torch.maia.is_available() and torch.maia.device_count() >= 1

# Eager: native kernels of the elementwise, reduction, GEMM and NN binaries.
torch.manual_seed(0)
x, y = torch.randn(64, 33), torch.randn(64, 33)
xd, yd = x.to("maia"), y.to("maia")
assert xd.device.type == "maia"
torch.testing.assert_close((xd * yd + xd.exp()).cpu(), x * y + x.exp())
torch.testing.assert_close(xd.sum(dim=1).cpu(), x.sum(dim=1))
torch.testing.assert_close((xd @ yd.T).cpu(), x @ y.T)
torch.testing.assert_close(torch.softmax(xd, dim=1).cpu(), torch.softmax(x, dim=1))
print("eager: ok")

# torch.compile: Inductor's maia backend, kernels built by the wheel's maia-compile.
import maia_inductor.compiler  # noqa: E402

compiler = maia_inductor.compiler.compiler_path()
assert under(compiler, prefix), f"maia_inductor uses {compiler}, not the installed one"


def fn(a, b):
    return torch.relu(a * b + 1.0).sum(dim=1) + a.amax(dim=1)


compiled = torch.compile(fn)
torch.testing.assert_close(compiled(xd, yd).cpu(), fn(x, y))
cache = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
binaries = list(cache.rglob("*.maiabin"))
assert binaries, f"torch.compile wrote no MAIA kernel binary under {cache}"
print(f"torch.compile: ok ({len(binaries)} kernel binaries, compiler {compiler})")


# A GEMM template kernel: the installed compiler links the installed
# micro-kernel archive (lib/maia/kernels) into it.
def linear_gelu(a, w, bias):
    return torch.nn.functional.gelu(torch.nn.functional.linear(a, w, bias))


w, bias = torch.randn(24, 33), torch.randn(24)
torch.testing.assert_close(torch.compile(linear_gelu)(xd, w.to("maia"), bias.to("maia")).cpu(),
                           linear_gelu(x, w, bias), rtol=1e-4, atol=1e-4)
print("torch.compile GEMM template: ok")

# cpp_wrapper: the C++ wrapper carries the installed maia/aoti.h.
import torch._inductor.config as inductor_config  # noqa: E402

torch._dynamo.reset()
with inductor_config.patch(cpp_wrapper=True):
    torch.testing.assert_close(torch.compile(fn)(xd, yd).cpu(), fn(x, y))
print("cpp_wrapper: ok")

# The compiler workers that torch.compile started: the installed binary, and
# none of their mappings in the checkout either.
workers = []
for stat in Path("/proc").glob("[0-9]*/stat"):
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid():
            workers.append(stat.parent)
    except (OSError, IndexError):
        continue
assert workers, "no maia-compile worker process found"

# A user kernel: the maia-compile console script on PATH (the venv's bin),
# then load_module.
script = shutil.which("maia-compile")
assert script and under(script, prefix), f"maia-compile on PATH is {script!r}, not the venv's"
subprocess.run([script, "softmax.mlir", "-o", "softmax.maiabin"], check=True)
module = torch.maia.load_module("softmax.maiabin")
out = torch.empty_like(xd)
module.softmax(xd, out, grid=(x.shape[0],))
torch.testing.assert_close(out.cpu(), torch.softmax(x, dim=1))
print("load_module: ok")

# maia-opt, the other console script: it runs (its libraries resolve).
opt = shutil.which("maia-opt")
assert opt and under(opt, prefix), f"maia-opt on PATH is {opt!r}, not the venv's"
version = subprocess.run([opt, "--version"], check=True, capture_output=True, text=True).stdout
assert "LLVM" in version, f"maia-opt --version printed {version!r}"
print("maia-opt: ok")


# Nothing from the checkout: Python modules, mapped files of this process and
# of the compiler workers.
def mapped_files(pid) -> set[str]:
    files = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith("/"):
            files.add(parts[5].removesuffix(" (deleted)"))
    return files


loaded = {m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)}
for label, files in [("module", loaded), ("mapping", mapped_files("self"))] + [
        (f"worker {w.name} mapping", mapped_files(w.name) | {os.readlink(w / "exe")})
        for w in workers]:
    if inside := sorted(f for f in files if under(f, checkout)):
        sys.exit(f"[wheel] error: {label}s from the checkout {checkout}: {inside[:5]}")
for name in ("torch", "torch_maia", "maia_inductor"):
    origin = sys.modules[name].__file__
    assert under(origin, prefix), f"{name} was imported from {origin}, not from the venv"
maps = mapped_files("self")
for library in ("libmaia_torch.so", "libmaia_runtime.so", "libtorch_cpu.so"):
    paths = [f for f in maps if f.endswith("/" + library)]
    assert paths and all(under(p, prefix) for p in paths), f"{library} mapped from {paths}"
print(f"nothing loaded from {checkout}: {len(loaded)} modules, "
      f"{len(maps)} mapped files, {len(workers)} compiler workers checked")
