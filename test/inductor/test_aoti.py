"""AOTInductor packages of maia models: compiled with
torch._inductor.aoti_compile_and_package, loaded with aoti_load_package (the
maia runner of RegisterAOTIModelRunner), run at batch sizes other than the
exported one, against eager CPU; and the errors of broken packages."""

import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "bench"))
import aoti_packages  # noqa: E402
import model_zoo  # noqa: E402

from compile_support import to_maia  # noqa: E402

def run_cases(runner, cases, device="maia:0"):
    for inputs, expected in zip(cases["inputs"], cases["expected"]):
        actual = runner(*[x.to(device) for x in inputs])
        actual = model_zoo.first_tensor(actual)
        assert actual.device == torch.device(device)
        torch.testing.assert_close(actual.cpu(), expected, atol=2e-4, rtol=2e-4)


@pytest.mark.parametrize("name", sorted(model_zoo.ZOO))
def test_zoo_package_matches_eager_cpu(name, tmp_path):
    pt2, cases_path = aoti_packages.package(name, tmp_path)
    runner = torch._inductor.aoti_load_package(str(pt2))
    run_cases(runner, torch.load(cases_path))


@pytest.fixture(scope="module")
def mlp_package(tmp_path_factory):
    directory = tmp_path_factory.mktemp("mlp")
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    x = torch.randn(3, 8)
    pt2 = aoti_packages.compile_package(model, (x,), directory / "mlp.pt2")
    return pt2, model, aoti_packages.cases(model, (x,))


def test_package_runs_on_the_device_it_is_loaded_on(mlp_package):
    if torch.maia.device_count() < 2:
        pytest.skip("needs two maia devices")
    pt2, _, cases = mlp_package
    runner = torch._inductor.aoti_load_package(str(pt2), device_index=1)
    run_cases(runner, cases, device="maia:1")


def test_weights_are_copied_to_the_device_once(mlp_package):
    # The container holds the weights in host memory; the first run makes a
    # device copy of each, later runs reuse them.
    pt2, _, cases = mlp_package
    runner = torch._inductor.aoti_load_package(str(pt2))
    x = cases["inputs"][0][0].to("maia")

    def allocations_of_one_run():
        before = torch.maia.memory_stats()["allocation.all.allocated"]
        runner(x)
        return torch.maia.memory_stats()["allocation.all.allocated"] - before

    first, second, third = (allocations_of_one_run() for _ in range(3))
    constants = len(runner.get_constant_fqns())
    assert constants > 0 and first - second == constants
    assert second == third


def test_device_index_out_of_range_is_refused(mlp_package):
    pt2, _, _ = mlp_package
    with pytest.raises(RuntimeError, match="maia device index 7|invalid device index|out of range"):
        torch._inductor.aoti_load_package(str(pt2), device_index=7)


def rewrite_package(pt2: Path, target: Path, edit) -> Path:
    """A copy of the package with edit(name, data) -> data | None (None drops the file)."""
    with zipfile.ZipFile(pt2) as source, zipfile.ZipFile(target, "w") as out:
        for info in source.infolist():
            data = edit(info.filename, source.read(info.filename))
            if data is not None:
                out.writestr(info, data)
    return target


def first_run_error(pt2: Path, cases) -> str:
    runner = torch._inductor.aoti_load_package(str(pt2))
    with pytest.raises(RuntimeError) as error:
        runner(*[x.to("maia") for x in cases["inputs"][0]])
        torch.maia.synchronize()
    return str(error.value)


def test_missing_kernel_file_is_named(mlp_package, tmp_path):
    pt2, _, cases = mlp_package
    broken = rewrite_package(pt2, tmp_path / "missing.pt2",
                             lambda name, data: None if name.endswith(".maiabin") else data)
    message = first_run_error(broken, cases)
    assert ".maiabin" in message and "does not exist" in message


def test_corrupt_kernel_file_is_named(mlp_package, tmp_path):
    pt2, _, cases = mlp_package
    broken = rewrite_package(pt2, tmp_path / "corrupt.pt2",
                             lambda name, data: data[:64] if name.endswith(".maiabin") else data)
    message = first_run_error(broken, cases)
    assert "cannot load compiled maia kernel file" in message and ".maiabin" in message


def test_kernel_for_features_the_host_lacks_is_refused(mlp_package, tmp_path):
    # A binary whose metadata asks for a CPU feature no host has stands in
    # for a package compiled on a machine with more features than this one.
    foreign = Path(os.environ["MAIA_KERNEL_DIR"]) / "unsupported_feature_kernels.maiabin"
    pt2, _, cases = mlp_package
    broken = rewrite_package(
        pt2, tmp_path / "foreign.pt2",
        lambda name, data: foreign.read_bytes() if name.endswith(".maiabin") else data)
    message = first_run_error(broken, cases)
    assert "amx-fp8-imaginary" in message and "lacks" in message
