"""The host fallback: every ATen operator works; counted and warned once."""

import warnings

import torch


class TestFallback:
    def test_any_op_works_and_is_counted(self):
        torch.maia.reset_fallback_counts()
        x = torch.randn(8, 8)
        y = torch.linalg.eig(x.maia()).eigenvalues.cpu()
        torch.testing.assert_close(y, torch.linalg.eig(x).eigenvalues)
        counts = torch.maia.fallback_counts()
        assert any("linalg_eig" in name for name in counts), counts

    def test_warns_once_per_op_and_can_be_silenced(self):
        # Two operators without a maia kernel (the general eigendecomposition
        # and its eigenvalues alone, LAPACK's geev); if one becomes native,
        # the count assertions below name it.
        torch.maia.reset_fallback_counts()
        torch.maia.set_fallback_warnings(True)
        x = torch.eye(3, device="maia")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.linalg.eig(x)
            torch.linalg.eig(x)
        messages = [str(w.message) for w in caught if "linalg_eig" in str(w.message)]
        assert len(messages) == 1 and "has no maia kernel" in messages[0]
        assert torch.maia.fallback_counts()["aten::linalg_eig"] == 2
        torch.maia.set_fallback_warnings(False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.linalg.eigvals(x)
        assert torch.maia.fallback_counts()["aten::_linalg_eigvals"] == 1
        assert not [w for w in caught if "_linalg_eigvals" in str(w.message)]

    def test_products_without_a_device_gemm_are_counted(self):
        # Complex products compute on the host inside the GEMM operators: the
        # counters must show it, per operator. Every real dtype is native.
        a, b = torch.randn(5, 6, dtype=torch.complex64), torch.randn(6, 4, dtype=torch.complex64)
        v = torch.randn(6, dtype=torch.complex64)
        cases = {
            "aten::mm": lambda t: t(a) @ t(b),
            "aten::bmm": lambda t: torch.bmm(t(a)[None], t(b)[None]),
            "aten::addmm": lambda t: torch.addmm(t(torch.ones(4, dtype=torch.complex64)),
                                                 t(a), t(b)),
            "aten::addmv": lambda t: torch.mv(t(a), t(v)),
            "aten::dot": lambda t: torch.dot(t(v), t(v)),
        }
        for name, product in cases.items():
            torch.maia.reset_fallback_counts()
            actual = product(lambda x: x.to("maia"))
            torch.testing.assert_close(actual.cpu(), product(lambda x: x))
            counted = [op for op in torch.maia.fallback_counts() if op.startswith(name)]
            assert counted, (name, torch.maia.fallback_counts())
        for dtype in (torch.float32, torch.float64, torch.int64, torch.uint8):
            x, y = torch.randn(5, 6).to(dtype).to("maia"), torch.randn(6, 4).to(dtype).to("maia")
            torch.maia.reset_fallback_counts()
            x @ y
            assert not torch.maia.fallback_counts(), f"a {dtype} product is native"

    def test_autograd_through_fallback(self):
        w = torch.randn(4, 3, requires_grad=True)
        wd = w.detach().maia().requires_grad_()
        x = torch.randn(2, 4)
        (x @ w).tanh().sum().backward()
        (x.maia() @ wd).tanh().sum().backward()
        torch.testing.assert_close(wd.grad.cpu(), w.grad)
