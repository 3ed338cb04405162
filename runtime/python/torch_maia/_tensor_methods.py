"""Tensor.is_maia and Tensor.maia() for PrivateUse1 tensors.

torch.utils.generate_methods_for_privateuse1_backend cannot add these: the
in-tree MAIA device already gives torch._C.TensorBase an ``is_maia``
property, which answers for the in-tree DeviceType::MAIA, never for
PrivateUse1. During the grace period of the device-name rule we shadow it on
torch.Tensor with one that answers by device name.
"""

import torch
from torch.overrides import handle_torch_function, has_torch_function_unary
from torch.utils.backend_registration import _normalization_device


def _is_maia(self: torch.Tensor) -> bool:
    if has_torch_function_unary(self):
        return handle_torch_function(_is_maia_property.__get__, (self,), self)
    return self.device.type == "maia"


_is_maia.__name__ = "is_maia"
_is_maia_property = property(_is_maia, doc="True if the tensor is on a maia device.")


def _to_maia(self: torch.Tensor, device=None, non_blocking=False, **kwargs) -> torch.Tensor:
    """A copy of this tensor on maia (``device``: index, string or torch.device)."""
    index = _normalization_device("maia", device)
    return self.to(torch.device("maia", index), non_blocking=non_blocking, **kwargs)


def install() -> None:
    if torch.Tensor.__dict__.get("is_maia") is not _is_maia_property:
        torch.Tensor.is_maia = _is_maia_property
        _to_maia.__name__ = "maia"
        torch.Tensor.maia = _to_maia
