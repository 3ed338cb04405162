"""Reductions over 3 and 6 ranks. The IPC transport reduces up to four
sources in one pass (the eager binary's fold3/fold4 kernels) and chains
longer reductions (a fold4, then the result with the rest): 3 ranks take
the 3-input kernel, 6 ranks the chain; the 2- and 4-rank worlds of the
other files take the binary and 4-input kernels. Every op and dtype, on
the staged path (small messages) and the zero-copy one."""

import pytest

from dist_support import World
from test_collectives import (check_all_reduce, check_no_host_fallback, check_reduce,
                              check_reduce_scatter)
from test_zero_copy import ZERO_COPY, check_every_op_and_dtype

SIX_DEVICES = {"MAIA_VISIBLE_DEVICES": "0,1,2,3,4,5"}


@pytest.fixture(scope="module", params=[3, 6])
def staged_world(request):
    world = World(request.param, env=SIX_DEVICES)
    yield world
    world.close()


@pytest.fixture(scope="module", params=[3, 6])
def zero_copy_world(request):
    world = World(request.param, env={**SIX_DEVICES, **ZERO_COPY})
    yield world
    world.close()


class TestStaged:
    def test_all_reduce_reduce_and_reduce_scatter(self, staged_world):
        staged_world.run(check_all_reduce)
        staged_world.run(check_reduce)
        staged_world.run(check_reduce_scatter)
        staged_world.run(check_no_host_fallback)


class TestZeroCopy:
    def test_all_reduce_and_reduce_scatter(self, zero_copy_world):
        zero_copy_world.run(check_every_op_and_dtype)
        zero_copy_world.run(check_reduce_scatter)
        zero_copy_world.run(check_no_host_fallback)
