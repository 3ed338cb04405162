"""Device-generic tests through PyTorch's own machinery
(torch.testing._internal.common_device_type): written once for any device,
instantiated here for maia (PrivateUse1TestBase) and for the CPU, and compared.
Run: pytest test/python/test_device_generic.py -v (class names end in MAIA)."""

import torch
from torch.testing._internal.common_device_type import (
    deviceCountAtLeast,
    dtypes,
    instantiate_device_type_tests,
    onlyPRIVATEUSE1,
)
from torch.testing._internal.common_utils import TestCase

ALL_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
              torch.int32, torch.uint8, torch.bool)


class TestGenericTensorOps(TestCase):
    @dtypes(*ALL_DTYPES)
    def test_factories(self, device, dtype):
        x = torch.zeros(3, 4, device=device, dtype=dtype)
        self.assertEqual(x.device.type, torch.device(device).type)
        self.assertEqual(x, torch.zeros(3, 4, dtype=dtype))
        self.assertEqual(torch.ones(5, device=device, dtype=dtype).cpu(),
                         torch.ones(5, dtype=dtype))
        self.assertEqual(torch.full((2, 2), 1, device=device, dtype=dtype).cpu(),
                         torch.full((2, 2), 1, dtype=dtype))

    @dtypes(torch.float32, torch.float16, torch.bfloat16, torch.int64)
    def test_arithmetic_matches_cpu(self, device, dtype):
        a = torch.arange(12, dtype=dtype).reshape(3, 4)
        b = torch.full((3, 4), 2, dtype=dtype)
        self.assertEqual((a.to(device) * b.to(device) + 1).cpu(), a * b + 1)
        self.assertEqual(a.to(device).t().contiguous().cpu(), a.t().contiguous())

    def test_views_share_storage(self, device):
        x = torch.arange(10.0, device=device)
        v = x[2:6]
        v.fill_(-1)
        expected = torch.arange(10.0)
        expected[2:6] = -1
        self.assertEqual(x.cpu(), expected)
        self.assertEqual(x.view(2, 5).cpu(), expected.view(2, 5))

    def test_autograd(self, device):
        w = torch.randn(4, 3, device=device, requires_grad=True)
        x = torch.randn(2, 4, device=device)
        (x @ w).relu().sum().backward()
        self.assertEqual(w.grad.device, w.device)
        expected = x.cpu().t() @ ((x.cpu() @ w.detach().cpu()) > 0).float()
        self.assertEqual(w.grad.cpu(), expected)

    @onlyPRIVATEUSE1
    @deviceCountAtLeast(2)
    def test_multi_device_copies(self, devices):
        x = torch.randn(6, device=devices[0])
        for other in devices[1:]:
            y = x.to(other)
            self.assertEqual(y.device, torch.device(other))
            self.assertEqual(y.cpu(), x.cpu())

    @onlyPRIVATEUSE1
    def test_reports_privateuse1_keys(self, device):
        x = torch.ones(1, device=device)
        self.assertIn("PrivateUse1", str(torch._C._dispatch_keys(x)))


instantiate_device_type_tests(TestGenericTensorOps, globals(), only_for=("privateuse1", "cpu"))

if __name__ == "__main__":
    from torch.testing._internal.common_utils import run_tests

    run_tests()
