"""Operations after a sticky device error: a kernel fault on maia:0 is
reported by every later operation on maia:0, clearly, and maia:1 and the
host keep working. The fault is produced by launching a faulting test kernel
through the driver's C API (ctypes), as a user's custom kernel could."""

import ctypes
import os

import pytest
import torch

KERNEL_DIR = os.environ.get("MAIA_KERNEL_DIR")
pytestmark = pytest.mark.skipif(
    not KERNEL_DIR, reason="MAIA_KERNEL_DIR (the built test kernels) is set by ctest")


class KernelArg(ctypes.Structure):
    """maiaKernelArg of include/maia/runtime.h."""

    class Scalar(ctypes.Union):
        _fields_ = [("i", ctypes.c_int64), ("f", ctypes.c_double)]

    _fields_ = [("kind", ctypes.c_int), ("dtype", ctypes.c_int), ("data", ctypes.c_void_p),
                ("offset", ctypes.c_int64), ("rank", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * 8), ("strides", ctypes.c_int64 * 8),
                ("scalar", Scalar)]


MEMREF, SCALAR, I32, I64 = 0, 1, 3, 4


def launch_faulting_kernel(driver, flags: torch.Tensor, bad_program: int):
    module, kernel = ctypes.c_void_p(), ctypes.c_void_p()
    path = os.path.join(KERNEL_DIR, "basic_kernels.maiabin").encode()
    assert driver.maiaModuleLoad(ctypes.byref(module), path) == 0
    assert driver.maiaModuleGetKernel(module, b"trap_at", ctypes.byref(kernel)) == 0
    args = (KernelArg * 2)()
    args[0].kind, args[0].dtype, args[0].data = MEMREF, I32, flags.data_ptr()
    args[0].rank, args[0].sizes[0], args[0].strides[0] = 1, flags.numel(), 1
    args[1].kind, args[1].dtype, args[1].scalar.i = SCALAR, I64, bad_program
    grid = (ctypes.c_int64 * 3)(flags.numel(), 1, 1)
    # NULL stream: the default stream of the current device, torch's current.
    assert driver.maiaLaunchKernel(kernel, grid, args, 2, None) == 0


def test_operations_after_a_sticky_error():
    driver = ctypes.CDLL("libmaia_runtime.so")  # already loaded by torch_maia
    keep = torch.arange(8.0, device="maia:0")
    flags = torch.zeros(16, dtype=torch.int32, device="maia:0")
    launch_faulting_kernel(driver, flags, bad_program=3)
    with pytest.raises(RuntimeError, match=r"trap_at.*program id \(3, 0, 0\).*sticky"):
        torch.maia.synchronize(0)
    with pytest.raises(RuntimeError, match="maia:0 is in an error state"):
        (torch.ones(3, device="maia:0") + 1).cpu()
    with pytest.raises(RuntimeError, match="maia:0 is in an error state"):
        keep.cpu()
    # Other devices and the host are unaffected.
    assert torch.ones(4, device="maia:1").sum().item() == 4.0
    assert torch.ones(4).sum().item() == 4.0
    # After a reset, the device works again and the data it held survived.
    assert driver.maiaDeviceReset(0) == 0
    torch.testing.assert_close(keep.cpu(), torch.arange(8.0))
