"""Compiled MLIR kernels against PyTorch CPU.

Kernels are compiled by the maia-compile CLI and by its worker, run through
the driver's C API (ctypes; the torch glue is not involved, its autoload is
off), and compared with PyTorch CPU with torch.testing.assert_close, on sizes
that leave vector tails and on non-contiguous views.
"""
import ctypes
import json
import os
import subprocess

import pytest
import torch

COMPILER = os.environ["MAIA_COMPILE"]
KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")

MEMREF, SCALAR = 0, 1
F32 = 8
INDEX = 10
H2D, D2H = 1, 2


class KernelArg(ctypes.Structure):
    class Scalar(ctypes.Union):
        _fields_ = [("i", ctypes.c_int64), ("f", ctypes.c_double)]

    _fields_ = [("kind", ctypes.c_int), ("dtype", ctypes.c_int), ("data", ctypes.c_void_p),
                ("offset", ctypes.c_int64), ("rank", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * 8), ("strides", ctypes.c_int64 * 8),
                ("scalar", Scalar)]


@pytest.fixture(scope="module")
def driver():
    lib = ctypes.CDLL(os.environ["MAIA_RUNTIME_LIBRARY"])
    lib.maiaGetLastErrorMessage.restype = ctypes.c_char_p
    return lib


def check(lib, code):
    assert code == 0, lib.maiaGetLastErrorMessage().decode()


class Device:
    """Device copies of CPU tensors, freed at the end of a test."""

    def __init__(self, lib):
        self.lib, self.pointers = lib, []

    def upload(self, tensor):
        tensor = tensor.contiguous()
        ptr = ctypes.c_void_p()
        check(self.lib, self.lib.maiaMalloc(ctypes.byref(ptr), ctypes.c_size_t(max(tensor.nbytes, 4))))
        self.pointers.append(ptr)
        check(self.lib, self.lib.maiaMemcpy(ptr, ctypes.c_void_p(tensor.data_ptr()),
                                            ctypes.c_size_t(tensor.nbytes), H2D))
        return ptr

    def download(self, ptr, like):
        out = torch.empty_like(like).contiguous()
        check(self.lib, self.lib.maiaMemcpy(ctypes.c_void_p(out.data_ptr()), ptr,
                                            ctypes.c_size_t(out.nbytes), D2H))
        return out

    def free(self):
        for ptr in self.pointers:
            self.lib.maiaFree(ptr)


@pytest.fixture
def device(driver):
    d = Device(driver)
    yield d
    d.free()


def memref(ptr, sizes, strides, offset=0):
    arg = KernelArg(kind=MEMREF, dtype=F32, data=ptr, offset=offset, rank=len(sizes))
    for i, (size, stride) in enumerate(zip(sizes, strides)):
        arg.sizes[i], arg.strides[i] = size, stride
    return arg


def scalar(value):
    arg = KernelArg(kind=SCALAR, dtype=F32)
    arg.scalar.f = value
    return arg


class Module:
    def __init__(self, lib, path):
        self.lib, self.handle = lib, ctypes.c_void_p()
        check(lib, lib.maiaModuleLoad(ctypes.byref(self.handle), path.encode()))

    def launch(self, name, programs, args):
        kernel = ctypes.c_void_p()
        check(self.lib, self.lib.maiaModuleGetKernel(self.handle, name.encode(), ctypes.byref(kernel)))
        grid = (ctypes.c_int64 * 3)(programs, 1, 1)
        array = (KernelArg * len(args))(*args)
        check(self.lib, self.lib.maiaLaunchKernel(kernel, grid, array, len(args), None))
        check(self.lib, self.lib.maiaDeviceSynchronize())


def compile_cli(name, tmp_path):
    out = str(tmp_path / f"{name}.maiabin")
    subprocess.run([COMPILER, os.path.join(KERNELS, f"{name}.mlir"), "-o", out], check=True)
    return out


@pytest.fixture(scope="module")
def worker_binaries(tmp_path_factory):
    """All kernels compiled by one compile worker."""
    directory = tmp_path_factory.mktemp("worker")
    requests = [json.dumps({"id": name, "output": str(directory / f"{name}.maiabin"),
                            "source": open(os.path.join(KERNELS, f"{name}.mlir")).read()})
                for name in ("softmax", "row_sum", "elementwise", "gemm_ukernel")]
    done = subprocess.run([COMPILER, "--server"], input="\n".join(requests) + "\n",
                          capture_output=True, text=True, check=True)
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(reply["ok"] for reply in replies), replies
    return {reply["id"]: reply["output_path"] for reply in replies}


@pytest.fixture(params=["cli", "worker"])
def binary(request, tmp_path, worker_binaries):
    return lambda name: (compile_cli(name, tmp_path) if request.param == "cli"
                         else worker_binaries[name])


class TestCompiledKernels:
    @pytest.mark.parametrize("cols", [1, 15, 17, 4099])
    def test_softmax_matches_torch_on_padded_rows(self, driver, device, binary, cols):
        rows, ld = 11, cols + 3
        storage = torch.randn(rows, ld) * 8
        x = storage[:, :cols]  # a non-contiguous view: row stride ld
        dx, dy = device.upload(storage), device.upload(torch.zeros(rows, ld))
        Module(driver, binary("softmax")).launch(
            "softmax", rows, [memref(dx, [rows, cols], [ld, 1]), memref(dy, [rows, cols], [ld, 1])])
        y = device.download(dy, storage)[:, :cols]
        torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-7)

    @pytest.mark.parametrize("cols", [3, 16, 1000])
    def test_row_sum_matches_torch(self, driver, device, binary, cols):
        rows = 9
        x = torch.randn(rows, cols)
        dx, dout = device.upload(x), device.upload(torch.zeros(rows))
        Module(driver, binary("row_sum")).launch(
            "row_sum", rows, [memref(dx, [rows, cols], [cols, 1]), memref(dout, [rows], [1])])
        torch.testing.assert_close(device.download(dout, torch.zeros(rows)), x.sum(dim=1),
                                   rtol=1e-5, atol=1e-5)

    @pytest.mark.parametrize("n", [1, 31, 1025, 5000])
    def test_elementwise_matches_torch(self, driver, device, binary, n):
        a, b = torch.randn(n) * 3, torch.randn(n) * 3
        da, db, dout = device.upload(a), device.upload(b), device.upload(torch.zeros(n))
        Module(driver, binary("elementwise")).launch(
            "tanh_exp_axpy", (n + 1023) // 1024,
            [memref(da, [n], [1]), memref(db, [n], [1]), memref(dout, [n], [1]), scalar(0.5)])
        torch.testing.assert_close(device.download(dout, a), torch.tanh(a) + 0.5 * torch.exp(b),
                                   rtol=2e-6, atol=2e-6)

    def test_transposed_view_matches_torch(self, driver, device, binary):
        base = torch.randn(7, 13)
        x = base.t()  # 13 x 7, strides (1, 13)
        dx, dout = device.upload(base), device.upload(torch.zeros(13, 7))
        Module(driver, binary("elementwise")).launch(
            "scale_shift_2d", 13, [memref(dx, [13, 7], list(x.stride())), memref(dout, [13, 7], [7, 1]),
                                   scalar(2.0), scalar(-1.0)])
        torch.testing.assert_close(device.download(dout, torch.zeros(13, 7)), x * 2.0 - 1.0)


def index(value):
    arg = KernelArg(kind=SCALAR, dtype=INDEX)
    arg.scalar.i = value
    return arg


class TestMicroKernelCalls:
    """Kernels calling the GEMM micro-kernel library, which the compiler links
    into their binary (compiler/lib/Target/Ukernels.cpp)."""

    # 130 rows on 2 programs: blocks of 20, 20, 20, 5 rows reusing packed B;
    # K = 900 spans several K blocks of the packing.
    @pytest.mark.parametrize("m,n,k,programs", [(1, 1, 1, 1), (37, 45, 29, 3), (130, 70, 300, 2),
                                                (130, 100, 900, 2)])
    @pytest.mark.parametrize("transposed_b", [False, True])
    def test_gemm_relu_matches_torch(self, driver, device, binary, m, n, k, programs,
                                     transposed_b):
        a, b = torch.randn(m, k), torch.randn(k, n)
        b_storage = b.t().contiguous() if transposed_b else b
        b_strides = (1, k) if transposed_b else (n, 1)
        da, db = device.upload(a), device.upload(b_storage)
        dc = device.upload(torch.full((m, n), float("nan")))
        Module(driver, binary("gemm_ukernel")).launch(
            "gemm_relu", programs,
            [memref(da, [m * k], [1]), memref(db, [k * n], [1]), memref(dc, [m * n], [1]),
             index(m), index(n), index(k), index(b_strides[0]), index(b_strides[1])])
        # fp32 sums of k products in another order than torch's BLAS
        tolerance = 2e-6 * k ** 0.5 * 10
        torch.testing.assert_close(device.download(dc, torch.zeros(m, n)), torch.relu(a @ b),
                                   rtol=tolerance, atol=tolerance)

    def test_new_contents_of_b_are_packed_again(self, driver, device, binary):
        # The same device buffers launched twice, B rewritten in between: the
        # second launch's first call must not reuse the panels the first
        # launch packed (reuse_b is 0 there), whatever thread runs it.
        m, n, k = 60, 64, 100
        a, b1, b2 = torch.randn(m, k), torch.randn(k, n), torch.randn(k, n)
        da, db = device.upload(a), device.upload(b1)
        dc = device.upload(torch.zeros(m, n))
        module = Module(driver, binary("gemm_ukernel"))
        args = [memref(da, [m * k], [1]), memref(db, [k * n], [1]), memref(dc, [m * n], [1]),
                index(m), index(n), index(k), index(n), index(1)]
        for b in (b1, b2, b1, b2):
            check(driver, driver.maiaMemcpy(db, ctypes.c_void_p(b.data_ptr()),
                                            ctypes.c_size_t(b.nbytes), H2D))
            module.launch("gemm_relu", 1, args)
            torch.testing.assert_close(device.download(dc, torch.zeros(m, n)),
                                       torch.relu(a @ b), rtol=1e-4, atol=1e-4)
