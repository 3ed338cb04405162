"""Shared by the lowering tests: compile a function on maia, check it
against CPU, print its kernels' MLIR for FileCheck."""

import torch

torch.maia.set_fallback_warnings(False)


def show(fn, *args, atol=1e-5, rtol=1e-5, **compile_options):
    from maia_inductor.testing import compiled_kernels

    on_maia = [a.to("maia") if isinstance(a, torch.Tensor) else a for a in args]
    result, kernels = compiled_kernels(fn, *on_maia, **compile_options)
    expected = fn(*args)
    torch.testing.assert_close(result, expected, atol=atol, rtol=rtol, check_device=False)
    print(f"// {fn.__name__}: {len(kernels)} kernels")
    for kernel in kernels:
        print(kernel.mlir)
