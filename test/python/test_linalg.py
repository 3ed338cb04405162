"""Dense linear algebra on the device (runtime/kernels/nn/linalg.h,
linalg_spectral.h, ops/Linalg*.cpp) against the CPU's LAPACK: LU
factor/solve/unpack, solve, inverse, det, slogdet, Cholesky and its
solve/inverse, triangular solves, QR, LDL (Bunch-Kaufman), the SVD and the symmetric
eigendecomposition (vectors up to sign), the matrix exponential, and the
composites built on them; batches, broadcasting, rectangular LU,
left/right and adjoint solves; the LU and pivots outputs themselves; the
CPU's errors for singular and non-positive-definite inputs and for
float16; out= tensors of any strides; complex inputs and general eig on
the counted host fallback."""

import math
import re

import pytest
import torch

from native_check import assert_native_matches

L = torch.linalg
FLOATS = [torch.float32, torch.float64]


def matrices(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(3, 4, 4, generator=g, dtype=dtype)
    b = torch.randn(3, 4, 2, generator=g, dtype=dtype)
    spd = a @ a.mT + 0.5 * torch.eye(4, dtype=dtype)
    return a, b, spd


@pytest.mark.parametrize("dtype", FLOATS)
def test_lu_factor_unpack_and_solve(dtype):
    a, b, _ = matrices(dtype)
    g = torch.Generator().manual_seed(1)
    for shape in [(4, 4), (3, 4, 4), (2, 5, 3), (2, 3, 5)]:
        x = torch.randn(shape, generator=g, dtype=dtype)
        assert_native_matches(L.lu_factor_ex, x)  # LU, pivots, info as the CPU's
        assert_native_matches(lambda t: torch.lu_unpack(*L.lu_factor(t)), x)
        assert_native_matches(L.lu, x)
    lu, pivots = L.lu_factor(a)
    for left in (True, False):
        for adjoint in (False, True):
            rhs = b if left else b.mT
            assert_native_matches(
                lambda f, p, r: L.lu_solve(f, p, r, left=left, adjoint=adjoint), lu, pivots, rhs)
    assert_native_matches(torch.lu_solve, b, lu, pivots)
    # One factorization broadcast over a batch of right-hand sides.
    assert_native_matches(L.lu_solve, lu[0], pivots[0], torch.randn(5, 3, 4, 2, dtype=dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_solve_inverse_and_determinants(dtype):
    a, b, spd = matrices(dtype)
    assert_native_matches(L.solve, a, b)
    assert_native_matches(L.solve, a, b[..., 0])  # vector right-hand side
    assert_native_matches(lambda x, y: L.solve(x, y, left=False), a, b.mT)
    assert_native_matches(L.solve_ex, a, b)  # LU and pivots of A^T, as the CPU
    assert_native_matches(L.solve, a[0], torch.randn(5, 3, 4, 2, dtype=dtype))
    assert_native_matches(L.inv_ex, a)
    assert_native_matches(L.det, a)
    assert_native_matches(torch.ops.aten._linalg_det, a)
    assert_native_matches(L.slogdet, a)
    assert_native_matches(torch.logdet, spd)
    assert_native_matches(L.det, torch.ones(4, 4, dtype=dtype))  # singular: 0
    assert_native_matches(lambda x: L.matrix_power(x, -3), a)
    assert_native_matches(lambda x: L.tensorinv(x.reshape(4, 2, 2), ind=1), a[0])
    assert_native_matches(lambda x, y: L.tensorsolve(x.reshape(2, 2, 4), y), a[0],
                          torch.randn(2, 2, dtype=dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.filterwarnings("ignore:torch.cholesky is deprecated")
def test_cholesky_family(dtype, upper):
    _, b, spd = matrices(dtype)
    assert_native_matches(lambda x: L.cholesky_ex(x, upper=upper), spd)
    assert_native_matches(lambda x: torch.cholesky(x, upper=upper), spd)
    factor = L.cholesky(spd, upper=upper)
    assert_native_matches(lambda y, f: torch.cholesky_solve(y, f, upper=upper), b, factor)
    assert_native_matches(lambda f: torch.cholesky_inverse(f, upper=upper), factor[0])
    not_positive = spd.clone()
    not_positive[1, 2, 2] = -50.0  # info = 3 for that batch entry
    assert_native_matches(lambda x: L.cholesky_ex(x, upper=upper), not_positive)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("upper", [False, True])
def test_triangular_solves(dtype, upper):
    a, b, _ = matrices(dtype)
    t = (a.triu() if upper else a.tril()) + 4 * torch.eye(4, dtype=dtype)
    for left in (True, False):
        for unit in (False, True):
            assert_native_matches(
                lambda x, y: L.solve_triangular(x, y, upper=upper, left=left,
                                                unitriangular=unit), t, b if left else b.mT)
    for transpose in (False, True):
        assert_native_matches(lambda y, x: torch.triangular_solve(y, x, upper=upper,
                                                                  transpose=transpose), b, t)
    # Broadcast A over B's batch; float32 A with float64 B solves in A's
    # dtype, as the CPU does.
    assert_native_matches(lambda x, y: L.solve_triangular(x, y, upper=upper), t[0],
                          torch.randn(2, 3, 4, 5, dtype=dtype))
    assert_native_matches(lambda x, y: L.solve_triangular(x, y, upper=upper), t.float(),
                          b.double())


def test_errors_are_the_cpus():
    singular = torch.zeros(3, 3)
    for fn in [L.inv, L.cholesky, lambda x: L.solve(x, torch.ones(3, device=x.device)),
               lambda x: L.inv(x.half()), lambda x: torch.cholesky_inverse(x.half()),
               lambda x: L.lu_factor(x.half()), lambda x: L.lu_factor(x, pivot=False)]:
        with pytest.raises(Exception) as cpu:
            fn(singular)
        with pytest.raises(type(cpu.value), match=re.escape(str(cpu.value).splitlines()[0])):
            fn(singular.to("maia"))


def test_out_tensors_of_any_strides():
    a, b, _ = matrices(torch.float64)
    x = torch.empty(3, 2, 4, dtype=torch.float64, device="maia").mT  # not column-major
    L.solve(a.to("maia"), b.to("maia"), out=x)
    torch.testing.assert_close(x.cpu(), L.solve(a, b))
    lu = torch.empty(3, 4, 4, dtype=torch.float64, device="maia")  # row-major
    pivots = torch.empty(0, dtype=torch.int32, device="maia")
    L.lu_factor(a.to("maia"), out=(lu, pivots))
    expected = L.lu_factor(a)
    torch.testing.assert_close(lu.cpu(), expected[0])
    assert torch.equal(pivots.cpu(), expected[1])


def test_complex_takes_the_counted_host_fallback():
    a = torch.randn(3, 3, dtype=torch.complex64)
    torch.maia.reset_fallback_counts()
    torch.testing.assert_close(L.inv(a.to("maia")).cpu(), L.inv(a))
    assert torch.maia.fallback_counts()


@pytest.mark.parametrize("dtype", FLOATS)
def test_householder_qr_family(dtype):
    # LAPACK's reflector conventions (larfg), so R's signs and the
    # reflectors themselves are the CPU's.
    g = torch.Generator().manual_seed(2)
    for shape in [(4, 4), (5, 3), (3, 5), (2, 6, 4), (2, 4, 6), (1, 1), (3, 0)]:
        a = torch.randn(shape, generator=g, dtype=dtype)
        assert_native_matches(torch.geqrf, a)
        for mode in ("reduced", "complete", "r"):
            assert_native_matches(lambda x: L.qr(x, mode=mode), a)
    a = torch.randn(2, 5, 3, generator=g, dtype=dtype)
    for k in range(4):
        assert_native_matches(L.householder_product, a,
                              torch.randn(2, k, generator=g, dtype=dtype))
    tau = torch.randn(2, 3, generator=g, dtype=dtype)
    for left in (True, False):
        for transpose in (False, True):
            other = torch.randn((2, 5, 4) if left else (2, 4, 5), generator=g, dtype=dtype)
            assert_native_matches(lambda x, t, c: torch.ormqr(x, t, c, left=left,
                                                               transpose=transpose),
                                  a, tau, other)


def test_householder_errors_are_the_cpus():
    a = torch.randn(4, 3)
    cases = [lambda x: torch.geqrf(x[0]), lambda x: torch.geqrf(x.half()),
             lambda x: L.householder_product(x.mT, x[0, :2]),
             lambda x: L.householder_product(x, x[:, 0]),
             lambda x: L.householder_product(x, x[0, :2].double()),
             lambda x: torch.ormqr(x, x[0], x[:3, :2].repeat(2, 1)[:5]),
             lambda x: L.qr(x, mode="x")]
    for fn in cases:
        with pytest.raises(Exception) as cpu:
            fn(a)
        with pytest.raises(type(cpu.value), match=re.escape(str(cpu.value).splitlines()[0])):
            fn(a.to("maia"))


@pytest.mark.parametrize("dtype", FLOATS)
def test_singular_values_and_symmetric_eigenvalues(dtype):
    g = torch.Generator().manual_seed(3)
    for shape in [(4, 4), (5, 3), (3, 5), (2, 6, 4), (1, 1), (3, 0), (0, 3, 3), (7, 7)]:
        a = torch.randn(shape, generator=g, dtype=dtype)
        assert_native_matches(L.svdvals, a)
        if a.numel():
            assert_native_matches(lambda x: L.matrix_norm(x, "nuc"), a)
            assert_native_matches(lambda x: L.matrix_norm(x, 2), a)
        if shape[-1] == shape[-2]:
            assert_native_matches(L.eigvalsh, a + a.mT)
            assert_native_matches(lambda x: L.eigvalsh(x, UPLO="U"), a)  # one triangle read
            if a.numel():
                assert_native_matches(L.cond, a)
    low_rank = torch.randn(5, 3, generator=g, dtype=dtype) @ torch.randn(3, 5, generator=g,
                                                                          dtype=dtype)
    assert_native_matches(L.matrix_rank, low_rank)
    assert_native_matches(L.eigvalsh, 3 * torch.eye(5, dtype=dtype))  # repeated
    assert_native_matches(L.svdvals, torch.zeros(3, 4, dtype=dtype))


def assert_orthonormal_columns(q):
    eye = torch.eye(q.shape[-1], dtype=q.dtype)
    torch.testing.assert_close(q.mT @ q, eye.expand(q.mT.shape[:-2] + eye.shape))


@pytest.mark.parametrize("dtype", FLOATS)
def test_singular_vectors_on_the_device(dtype):
    # Jacobi's vectors: a valid SVD, equal to LAPACK's up to signs (and the
    # basis beyond the rank), as CUDA's are; compared as op_db does.
    g = torch.Generator().manual_seed(7)
    rank_two = torch.randn(6, 2, generator=g, dtype=dtype) @ torch.randn(2, 4, generator=g,
                                                                         dtype=dtype)
    cases = [torch.randn(shape, generator=g, dtype=dtype)
             for shape in [(5, 3), (3, 5), (4, 4), (2, 6, 4), (1, 1), (0, 3), (3, 0)]]
    for a in cases + [rank_two, torch.zeros(3, 2, dtype=dtype)]:
        for full in (True, False):
            torch.maia.reset_fallback_counts()
            u, s, vh = (t.cpu() for t in L.svd(a.to("maia"), full_matrices=full))
            assert torch.maia.fallback_counts() == {}
            cu, cs, cvh = L.svd(a, full_matrices=full)
            assert (u.shape, s.shape, vh.shape) == (cu.shape, cs.shape, cvh.shape)
            torch.testing.assert_close(s, cs)
            assert_orthonormal_columns(u)
            assert_orthonormal_columns(vh.mT)
            k = s.shape[-1]
            torch.testing.assert_close((u[..., :k] * s.unsqueeze(-2)) @ vh[..., :k, :], a)
            if a is not rank_two and a.abs().sum() > 0:  # distinct values: unique up to sign
                torch.testing.assert_close(u[..., :k].abs(), cu[..., :k].abs())
                torch.testing.assert_close(vh[..., :k, :].abs(), cvh[..., :k, :].abs())
    assert_native_matches(L.pinv, rank_two, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("dtype", FLOATS)
def test_symmetric_eigenvectors_on_the_device(dtype):
    g = torch.Generator().manual_seed(8)
    a = torch.randn(3, 5, 5, generator=g, dtype=dtype)
    for uplo in ("L", "U"):
        torch.maia.reset_fallback_counts()
        values, vectors = (t.cpu() for t in L.eigh(a.to("maia"), UPLO=uplo))
        assert torch.maia.fallback_counts() == {}
        cpu_values, cpu_vectors = L.eigh(a, UPLO=uplo)
        torch.testing.assert_close(values, cpu_values)
        torch.testing.assert_close(vectors.abs(), cpu_vectors.abs())
        assert_orthonormal_columns(vectors)
        triangle = a.tril() if uplo == "L" else a.triu()
        symmetric = triangle + triangle.mT - torch.diag_embed(a.diagonal(0, -2, -1))
        torch.testing.assert_close(symmetric @ vectors, vectors * values.unsqueeze(-2))
    # A repeated eigenvalue: any basis of its space, still orthonormal.
    values, vectors = (t.cpu() for t in L.eigh(torch.eye(4, dtype=dtype).to("maia") * 3))
    torch.testing.assert_close(values, torch.full((4,), 3.0, dtype=dtype))
    assert_orthonormal_columns(vectors)


@pytest.mark.parametrize("dtype", FLOATS)
def test_ldl_factor_and_solve_are_the_cpus(dtype):
    # Bunch-Kaufman as LAPACK's sytf2: the same 1x1/2x2 blocks and pivots.
    g = torch.Generator().manual_seed(9)
    for n in (1, 2, 5, 17, 70):
        a = torch.randn(3, n, n, generator=g, dtype=dtype)
        a = a + a.mT
        if n > 1:
            a[1, 0, 0] = 0  # a zero leading diagonal: a 2x2 block first
        a[2] *= torch.linspace(1e-3, 1, n, dtype=dtype)  # small pivots, interchanges
        b = torch.randn(3, n, 2, generator=g, dtype=dtype)
        tolerance = {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {}
        assert_native_matches(lambda x: L.ldl_factor_ex(x), a, **tolerance)
        ld, pivots, _ = L.ldl_factor_ex(a)
        assert_native_matches(lambda f, p, r: L.ldl_solve(f, p, r), ld, pivots, b, **tolerance)
        assert_native_matches(lambda f, p, r: L.ldl_solve(f, p, r), ld[0], pivots[0], b,
                              **tolerance)  # factors broadcast over the right-hand sides
    singular = torch.zeros(2, 3, 3, dtype=dtype)
    singular[1] = torch.eye(3, dtype=dtype)
    assert_native_matches(lambda x: L.ldl_factor_ex(x), singular)  # info names the zero block
    for bad, message in ((torch.ones(2, 3, dtype=dtype), "square"),
                         (torch.eye(2, dtype=torch.float16), "not implemented for 'Half'")):
        with pytest.raises(RuntimeError, match=message):
            L.ldl_factor_ex(bad.to("maia"))


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_follows_each_drivers_conventions(driver):
    # Solution, residuals (tall inputs; not gelsy; gelsd/gelss at full
    # rank), rank (not gels) and singular values (gelsd/gelss) as the CPU
    # gives them, from the device SVD.
    g = torch.Generator().manual_seed(10)
    for dtype in FLOATS:
        tolerance = {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {}
        for m, n in ((5, 3), (3, 3), (3, 5), (0, 3), (3, 0)):
            for batch in ((), (2,)):
                a = torch.randn(*batch, m, n, generator=g, dtype=dtype)
                for b in (torch.randn(*batch, m, 2, generator=g, dtype=dtype),
                          torch.randn(*batch, m, generator=g, dtype=dtype)):
                    assert_native_matches(lambda x, y: tuple(L.lstsq(x, y, driver=driver)), a, b,
                                          **tolerance)
    a = torch.randn(1, 5, 3, generator=g, dtype=torch.float64)  # A's batch broadcast over B's
    b = torch.randn(3, 5, 2, generator=g, dtype=torch.float64)
    assert_native_matches(lambda x, y: tuple(L.lstsq(x, y, driver=driver)), a, b)
    if driver != "gels":  # rank-deficient: the minimum-norm solution, the numerical rank
        low_rank = torch.randn(5, 2, generator=g, dtype=torch.float64) @ torch.randn(
            2, 3, generator=g, dtype=torch.float64)
        assert_native_matches(lambda x, y: tuple(L.lstsq(x, y, driver=driver)), low_rank,
                              b[0])
    if driver in ("gelsd", "gelss"):  # an explicit rcond on the singular values
        assert_native_matches(lambda x, y: tuple(L.lstsq(x, y, rcond=0.5, driver=driver)),
                              low_rank, b[0])
    with pytest.raises(RuntimeError, match="parameter `driver` should be one of"):
        L.lstsq(a[0].to("maia"), b[0].to("maia"), driver="qr")


def test_linalg_operators_leave_their_inputs_unchanged():
    # The kernels overwrite a workspace: it must be a copy even when the
    # input already has the dtype and layout the kernel works in (svd and
    # svdvals of a contiguous float64 matrix, geqrf of a column-major one
    # used to overwrite it).
    calls = [
        lambda a, spd, b: L.svd(a), lambda a, spd, b: L.svdvals(a),
        lambda a, spd, b: L.svd(a[:, :3]), lambda a, spd, b: L.eigh(spd),
        lambda a, spd, b: L.eigvalsh(spd), lambda a, spd, b: torch.geqrf(a),
        lambda a, spd, b: L.qr(a), lambda a, spd, b: L.lu_factor(a),
        lambda a, spd, b: L.cholesky(spd), lambda a, spd, b: L.solve(a, b),
        lambda a, spd, b: L.solve_triangular(spd.triu(), b, upper=True),
        lambda a, spd, b: torch.cholesky_solve(b, L.cholesky(spd)),
        lambda a, spd, b: L.ldl_factor(spd), lambda a, spd, b: L.lstsq(a, b),
        lambda a, spd, b: L.matrix_exp(a), lambda a, spd, b: L.pinv(a),
        lambda a, spd, b: L.inv(a), lambda a, spd, b: L.det(a),
    ]
    g = torch.Generator().manual_seed(11)
    for dtype in FLOATS:
        a = torch.randn(4, 4, generator=g, dtype=dtype)
        inputs = {"a": a, "spd": a @ a.mT + torch.eye(4, dtype=dtype),
                  "b": torch.randn(4, 2, generator=g, dtype=dtype)}
        for column_major in (False, True):
            for call in calls:
                on_device = {name: (value.mT.contiguous().mT if column_major else value).to("maia")
                             for name, value in inputs.items()}
                call(**on_device)
                for name, value in on_device.items():
                    assert torch.equal(value.cpu(), inputs[name]), (dtype, column_major, name)


def test_general_eigenvectors_take_the_counted_host_fallback():
    a = torch.randn(4, 4, dtype=torch.float64)
    torch.maia.reset_fallback_counts()
    for mine, cpu in zip(L.eig(a.to("maia")), L.eig(a)):
        torch.testing.assert_close(mine.cpu(), cpu)
    assert torch.maia.fallback_counts() == {"aten::linalg_eig": 1}


def test_non_finite_input_raises_the_cpus_error():
    a = torch.randn(3, 3)
    a[0, 0] = float("nan")
    for fn in (L.svdvals, L.eigvalsh):
        with pytest.raises(torch.linalg.LinAlgError) as cpu:
            fn(a)
        with pytest.raises(torch.linalg.LinAlgError, match=re.escape(str(cpu.value))):
            fn(a.to("maia"))


@pytest.mark.parametrize("dtype", FLOATS)
def test_matrix_exp_from_device_products(dtype):
    g = torch.Generator().manual_seed(5)
    eps = torch.finfo(dtype).eps
    for scale in (1e-9, 1e-3, 0.3, 1.0, 4.0, 30.0):  # no squaring to several squarings
        a = torch.randn(3, 5, 5, generator=g, dtype=dtype) * scale
        a[1] /= 8  # matrices of one batch needing different squaring counts
        torch.maia.reset_fallback_counts()
        mine = L.matrix_exp(a.to("maia")).cpu()
        assert torch.maia.fallback_counts() == {}
        cpu = L.matrix_exp(a)
        # Within the CPU's own error (against float64, or against itself in
        # float64), relative to each matrix's largest entry; rounding errors
        # double with each squaring of the scaled exponential.
        exact = L.matrix_exp(a.double()) if dtype == torch.float32 else cpu
        size = exact.abs().amax((-2, -1), keepdim=True)
        error = lambda x: ((x.double() - exact) / size).abs().max().item()
        bound = 3.01 if dtype == torch.float32 else 1.09
        squarings = max(0, math.ceil(math.log2(a.abs().sum(-2).amax().item() / bound)))
        assert error(mine) <= 4 * max(error(cpu), 2**squarings * 8 * eps), (scale, error(mine),
                                                                            error(cpu))
    assert_native_matches(L.matrix_exp, torch.randn(2, 1, 1, generator=g, dtype=dtype))
    assert_native_matches(L.matrix_exp, torch.empty(0, 3, 3, dtype=dtype))
    nilpotent = torch.triu(torch.ones(4, 4, dtype=dtype), diagonal=1)  # exact: a finite series
    expected = torch.eye(4, dtype=dtype) + sum(torch.linalg.matrix_power(nilpotent, k) / factorial
                                               for k, factorial in ((1, 1), (2, 2), (3, 6)))
    torch.testing.assert_close(L.matrix_exp(nilpotent.to("maia")).cpu(), expected)
    rotation = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=dtype) * 2.5  # exp = rotation by 2.5
    c, s = torch.cos(torch.tensor(2.5, dtype=dtype)), torch.sin(torch.tensor(2.5, dtype=dtype))
    torch.testing.assert_close(L.matrix_exp(rotation.to("maia")).cpu(),
                               torch.stack([torch.stack([c, -s]), torch.stack([s, c])]))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_matrix_exp_of_half_types_rounds_a_float32_result(dtype):
    # The CPU's bfloat16 result of this matrix is NaN; maia's is the float32
    # one rounded.
    a = (torch.randn(4, 5, 5, generator=torch.Generator().manual_seed(6)) * 2).to(dtype)
    mine = L.matrix_exp(a.to("maia")).cpu()
    assert mine.dtype == dtype
    exact = L.matrix_exp(a.double())
    size = exact.abs().amax((-2, -1), keepdim=True)
    assert ((mine.double() - exact) / size).abs().max() <= torch.finfo(dtype).eps


def test_matrix_exp_gradient_and_errors():
    a = torch.randn(4, 4, dtype=torch.float64)

    def grad_of(x):
        x = x.detach().requires_grad_()
        (L.matrix_exp(x) * torch.arange(16.0, dtype=x.dtype, device=x.device).view(4, 4)
         ).sum().backward()
        return x.grad

    assert_native_matches(grad_of, a)
    for bad, message in ((torch.ones(2, 3), "square"), (torch.ones(2, 2, dtype=torch.long),
                                                        "floating point or complex")):
        with pytest.raises(RuntimeError, match=message):
            L.matrix_exp(bad)
        with pytest.raises(RuntimeError, match=message):
            L.matrix_exp(bad.to("maia"))
