"""torch.maia random number generation: one counter-based generator per
device (state: seed and offset)."""

import torch

from .. import _C


def _generator(device=None) -> torch.Generator:
    from . import _index

    return _C._default_generator(_index(device))


def _all():
    from . import device_count

    return [_C._default_generator(i) for i in range(device_count())]


def manual_seed(seed: int) -> None:
    _generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for generator in _all():
        generator.manual_seed(int(seed))


def seed() -> None:
    _generator().seed()


def seed_all() -> None:
    generators = _all()
    if generators:
        random_seed = generators[0].seed()
        for generator in generators[1:]:
            generator.manual_seed(random_seed)


def initial_seed() -> int:
    return _generator().initial_seed()


def get_rng_state(device="maia") -> torch.Tensor:
    return _generator(device).get_state()


def set_rng_state(new_state: torch.Tensor, device="maia") -> None:
    _generator(device).set_state(new_state)


def get_rng_state_all() -> list:
    return [generator.get_state() for generator in _all()]


def set_rng_state_all(new_states) -> None:
    for generator, state in zip(_all(), new_states):
        generator.set_state(state)
