"""Compile on maia, run eagerly on CPU, compare."""

import torch

# Per dtype: (atol, rtol) for compiled maia against eager CPU. float32 is
# looser than bitwise because the compiler reassociates reductions and uses
# polynomial exp/log/tanh/erf (a few ulp); low precision types round once
# per stored intermediate, where eager CPU may round in other places.
TOLERANCES = {
    # torch.testing's default for float64 (1e-7) passes float64 computed in
    # float32 (6e-8 relative): 1e-10 catches that and still allows
    # reassociated sums and polynomial math cores (about 1e-15).
    torch.float64: (1e-10, 1e-10),
    torch.float32: (1e-4, 1e-4),
    torch.bfloat16: (3e-2, 3e-2),
    torch.float16: (2e-3, 2e-3),
}


def to_maia(value):
    if isinstance(value, torch.Tensor):
        return value.to("maia")
    if isinstance(value, (list, tuple)):
        return type(value)(to_maia(v) for v in value)
    return value


def to_cpu(value):
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if isinstance(value, (list, tuple)):
        return type(value)(to_cpu(v) for v in value)
    if hasattr(value, "to_tuple"):  # transformers ModelOutput
        return to_cpu(value.to_tuple())
    return value


def assert_compiled_matches(fn, *args, dtype=torch.float32, atol=None, rtol=None,
                            maia_kernels=True, **compile_options):
    """Compiles fn for maia and compares its result with fn on CPU; unless
    maia_kernels is False (a graph of extern kernels only), at least one MAIA
    kernel must have run, so a graph that silently fell back elsewhere fails."""
    from maia_inductor.runtime import MaiaCompiledKernel

    default_atol, default_rtol = TOLERANCES.get(dtype, (0, 0))
    expected = fn(*args)
    torch._dynamo.reset()
    launches = MaiaCompiledKernel.launches
    actual = torch.compile(fn, **compile_options)(*to_maia(args))
    if maia_kernels:
        assert MaiaCompiledKernel.launches > launches, "no MAIA kernel ran"
    torch.testing.assert_close(to_cpu(actual), to_cpu(expected),
                               atol=default_atol if atol is None else atol,
                               rtol=default_rtol if rtol is None else rtol, equal_nan=True)
    return actual


def kernel_count(fn, *args, **compile_options) -> int:
    from maia_inductor.testing import compiled_kernels

    _, kernels = compiled_kernels(fn, *to_maia(args), **compile_options)
    return len(kernels)
