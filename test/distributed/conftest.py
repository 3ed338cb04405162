"""Fixtures of the multi-process tests: worlds of 2 and 4 ranks, each rank on
its own maia device with one core."""

import pytest

from dist_support import World


@pytest.fixture(scope="module")
def world2():
    world = World(2)
    yield world
    world.close()


@pytest.fixture(scope="module")
def world4():
    world = World(4)
    yield world
    world.close()
