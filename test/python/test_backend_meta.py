"""Backend metadata of maia tensors (c10::BackendMeta, MaiaBackendMeta.h):
named flags set and read through torch._utils, kept by shallow copies, and
what torch.save and fake tensors do with them in torch 2.13."""

import io

import pytest
import torch
from torch._utils import get_tensor_metadata, set_tensor_metadata


@pytest.fixture
def tagged():
    t = torch.arange(6.0, device="maia")
    set_tensor_metadata(t, {"packed": True, "tiled": False})
    return t


def test_a_new_tensor_has_none():
    assert get_tensor_metadata(torch.ones(3, device="maia")) == {}


def test_flags_are_set_read_and_merged(tagged):
    assert get_tensor_metadata(tagged) == {"packed": True, "tiled": False}
    set_tensor_metadata(tagged, {"tiled": True})
    assert get_tensor_metadata(tagged) == {"packed": True, "tiled": True}


def test_flags_live_beside_the_conjugate_bit():
    z = torch.ones(2, dtype=torch.complex64, device="maia").conj()
    set_tensor_metadata(z, {"packed": True})
    assert get_tensor_metadata(z) == {"conj": True, "packed": True}


def test_shallow_copies_carry_their_own_copy(tagged):
    detached = tagged.detach()
    assert get_tensor_metadata(detached) == get_tensor_metadata(tagged)
    set_tensor_metadata(detached, {"other": True})
    assert "other" not in get_tensor_metadata(tagged)
    host = torch.empty(6)
    host.data = tagged  # cpu_tensor.data = maia_tensor
    assert host.device.type == "maia"
    assert get_tensor_metadata(host) == {"packed": True, "tiled": False}


def test_views_and_copies_start_without_flags(tagged):
    """As upstream: a view or a copy is a new TensorImpl, with no backend
    metadata of its own."""
    assert get_tensor_metadata(tagged[1:]) == {}
    assert get_tensor_metadata(tagged.clone()) == {}


def test_torch_save_keeps_values_but_not_flags(tagged):
    """torch 2.13's Tensor._reduce_ex_internal saves tensors whose device type
    is named "maia" (an in-tree device type of the same name) as CPU copies
    rebuilt by _rebuild_device_tensor_from_cpu_tensor, which carries no
    metadata; docs/migration.md explains it. This test notices if that
    changes."""
    buffer = io.BytesIO()
    torch.save(tagged, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    assert loaded.device.type == "maia"
    torch.testing.assert_close(loaded.cpu(), tagged.cpu())
    assert get_tensor_metadata(loaded) == {}


def test_fake_tensors_have_no_flags(tagged):
    from torch._subclasses.fake_tensor import FakeTensorMode

    fake = FakeTensorMode().from_tensor(tagged)
    assert fake.device == tagged.device
    assert get_tensor_metadata(fake) == {}
