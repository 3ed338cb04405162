"""The maia generator: seeding, reproducibility, state, torch.Generator."""

import torch


def draw(n=1000):
    return torch.randn(n, device="maia").cpu()


class TestRandom:
    def test_same_seed_same_numbers(self):
        torch.maia.manual_seed(1234)
        a = draw()
        torch.maia.manual_seed(1234)
        b = draw()
        assert torch.equal(a, b)
        assert not torch.equal(a, draw())

    def test_torch_manual_seed_seeds_maia(self):
        torch.manual_seed(7)
        a = draw()
        torch.manual_seed(7)
        assert torch.equal(a, draw())
        assert torch.maia.initial_seed() == 7

    def test_rng_state_round_trip(self):
        torch.maia.manual_seed(3)
        draw()
        state = torch.maia.get_rng_state()
        a = draw()
        torch.maia.set_rng_state(state)
        assert torch.equal(a, draw())
        states = torch.maia.get_rng_state_all()
        assert len(states) == 2
        torch.maia.set_rng_state_all(states)

    def test_explicit_generator(self):
        g = torch.Generator(device="maia")
        assert g.device == torch.device("maia:0")
        g.manual_seed(5)
        a = torch.rand(100, device="maia", generator=g).cpu()
        g.manual_seed(5)
        b = torch.rand(100, device="maia", generator=g).cpu()
        assert torch.equal(a, b)
        assert 0.0 <= a.min() and a.max() < 1.0

    def test_devices_have_independent_generators(self):
        torch.maia.manual_seed_all(11)
        a = torch.randn(10, device="maia:0").cpu()
        b = torch.randn(10, device="maia:1").cpu()
        assert torch.equal(a, b)  # same seed on each device
        torch.maia.manual_seed(12)  # only the current device
        assert not torch.equal(torch.randn(10, device="maia:0").cpu(),
                               torch.randn(10, device="maia:1").cpu())

    def test_dropout_is_reproducible(self):
        x = torch.ones(1000, device="maia")
        torch.manual_seed(0)
        a = torch.nn.functional.dropout(x, 0.5).cpu()
        torch.manual_seed(0)
        b = torch.nn.functional.dropout(x, 0.5).cpu()
        assert torch.equal(a, b) and 300 < int((a == 0).sum()) < 700
