"""Pinned asynchronous copies overlap with compute: while a kernel occupies
one stream, a non_blocking copy on another stream completes. The kernel
(wait_for_flag, a test kernel launched through the driver's C API) runs until
the test releases it, so nothing here depends on timing."""

import ctypes
import os

import pytest
import torch

from test_sticky_error import KERNEL_DIR, MEMREF, I32, KernelArg

pytestmark = pytest.mark.skipif(
    not KERNEL_DIR, reason="MAIA_KERNEL_DIR (the built test kernels) is set by ctest")


def launch_wait_for_flag(flag: torch.Tensor, stream: torch.Stream):
    driver = ctypes.CDLL("libmaia_runtime.so")
    module, kernel = ctypes.c_void_p(), ctypes.c_void_p()
    path = os.path.join(KERNEL_DIR, "basic_kernels.maiabin").encode()
    assert driver.maiaModuleLoad(ctypes.byref(module), path) == 0
    assert driver.maiaModuleGetKernel(module, b"wait_for_flag", ctypes.byref(kernel)) == 0
    args = (KernelArg * 1)()
    args[0].kind, args[0].dtype, args[0].data = MEMREF, I32, flag.data_ptr()
    args[0].rank, args[0].sizes[0], args[0].strides[0] = 1, 1, 1
    grid = (ctypes.c_int64 * 3)(1, 1, 1)
    handle = ctypes.c_void_p(stream.native_handle)
    assert driver.maiaLaunchKernel(kernel, grid, args, 1, handle) == 0


def test_pinned_copies_overlap_with_a_running_kernel():
    compute, copies = torch.maia.Stream(), torch.maia.Stream()
    flag = torch.zeros(1, dtype=torch.int32, device="maia")
    torch.maia.synchronize()
    launch_wait_for_flag(flag, compute)
    assert not compute.query()  # the kernel is running and holds its stream
    data = torch.randn(1 << 20).pin_memory()
    with torch.maia.stream(copies):
        on_device = data.to("maia", non_blocking=True)
        back = torch.empty_like(data).pin_memory()
        back.copy_(on_device, non_blocking=True)
    copies.synchronize()  # completes although the kernel still runs
    assert not compute.query()
    torch.testing.assert_close(back, data)
    with torch.maia.stream(copies):  # release the kernel
        flag.copy_(torch.ones(1, dtype=torch.int32).pin_memory(), non_blocking=True)
    compute.synchronize()
    assert compute.query()
