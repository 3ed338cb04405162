"""Checks of the torch_maia wheel for packaging.wheel (wheel_test.sh).

    check_wheel.py WHEEL --forbid DIR... [--system-dir DIR...]
        every component and entry point is in the wheel, nothing of the
        development set-up is (bytecode, tests, benchmarks), no ELF file has a
        RUNPATH/RPATH entry that is neither relative to $ORIGIN nor a
        --system-dir (libMLIR's), and no file contains the path of a --forbid
        directory (the checkout, with its build trees and venv).
    check_wheel.py --venv-contents FREEZE --wheelhouse DIR
        the venv (pip list --format=freeze) holds torch 2.13.0, the
        distributions of the wheelhouse (torch's dependencies) and torch_maia.
"""

import argparse
import configparser
import fnmatch
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# Glob patterns of the files the wheel must have (one match at least each).
REQUIRED = [
    "torch_maia/__init__.py",
    "torch_maia/_tools.py",
    "torch_maia/maia/kernels.py",
    "torch_maia/_C.cpython-311-x86_64-linux-gnu.so",
    "torch_maia/lib/libmaia_runtime.so",
    "torch_maia/lib/libmaia_torch.so",
    "torch_maia/lib/libMaiaCompiler.so",
    "torch_maia/lib/maia/kernels/maia_eager_kernels_v3.maiabin",
    "torch_maia/lib/maia/kernels/maia_eager_kernels_v4.maiabin",
    "torch_maia/lib/maia/kernels/maia_reduce_kernels.maiabin",
    "torch_maia/lib/maia/kernels/maia_nn_kernels.maiabin",
    "torch_maia/lib/maia/kernels/maia_gemm_kernels_v3.maiabin",
    "torch_maia/lib/maia/kernels/maia_gemm_kernels_v4.maiabin",
    "torch_maia/lib/maia/kernels/maia_conv_kernels_v3.maiabin",
    "torch_maia/lib/maia/kernels/maia_conv_kernels_v4.maiabin",
    "torch_maia/lib/maia/kernels/maia_attention_kernels_v3.maiabin",
    "torch_maia/lib/maia/kernels/maia_attention_kernels_v4.maiabin",
    "torch_maia/lib/maia/kernels/libmaia_ukernels_v3.a",
    "torch_maia/lib/maia/kernels/libmaia_ukernels_v4.a",
    "torch_maia/bin/maia-compile",
    "torch_maia/bin/maia-opt",
    "torch_maia/include/maia/runtime.h",
    "torch_maia/include/maia/aoti.h",
    "torch_maia/include/maia/aoti_device_constants.h",
    "torch_maia/lib/cmake/Maia/MaiaConfig.cmake",
    "maia_inductor/__init__.py",
    "maia_inductor/compiler.py",
    "torch_maia-*.dist-info/entry_points.txt",
]
# What must never be shipped: bytecode, tests, benchmarks, demo programs.
FORBIDDEN = ["*__pycache__*", "*.pyc", "*/test_*", "*conftest*", "*bench*", "*demo*", "*gtest*"]
ENTRY_POINTS = {
    "torch.backends": {"maia": "torch_maia:_autoload"},
    "torch_maia.inductor_backends": {"maia": "maia_inductor:inductor_codegen"},
    "console_scripts": {"maia-compile": "torch_maia._tools:maia_compile",
                        "maia-opt": "torch_maia._tools:maia_opt"},
}


def fail(message: str) -> None:
    sys.exit(f"[wheel] error: {message}")


def runpath_entries(path: Path) -> list[str] | None:
    """RUNPATH/RPATH entries of an ELF file, or None if it is not ELF."""
    with open(path, "rb") as f:
        if f.read(4) != b"\x7fELF":
            return None
    dynamic = subprocess.run(["readelf", "-d", str(path)], check=True, capture_output=True,
                             text=True).stdout
    entries = []
    for match in re.finditer(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]",
                             dynamic):
        entries += match.group(1).split(":")
    return entries


def check_wheel(wheel: Path, forbidden_dirs: list[str], system_dirs: list[str]) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        for pattern in REQUIRED:
            if not fnmatch.filter(names, pattern):
                fail(f"{wheel.name} has no {pattern}")
        shipped = [n for n in names if ".dist-info/" not in n]
        for pattern in FORBIDDEN:
            if bad := fnmatch.filter(shipped, pattern):
                fail(f"{wheel.name} ships {pattern}: {bad[:5]}")
        entry_points = configparser.ConfigParser()
        entry_points.optionxform = str
        entry_points.read_string(
            archive.read(fnmatch.filter(names, "*.dist-info/entry_points.txt")[0]).decode())
        for group, wanted in ENTRY_POINTS.items():
            have = dict(entry_points[group]) if entry_points.has_section(group) else {}
            if have != wanted:
                fail(f"entry points [{group}] are {have}, expected {wanted}")
        with tempfile.TemporaryDirectory() as tmp:
            archive.extractall(tmp)
            checked = 0
            for path in sorted(Path(tmp).rglob("*")):
                if not path.is_file():
                    continue
                name = path.relative_to(tmp)
                entries = runpath_entries(path)
                if entries is not None:
                    checked += 1
                    for entry in entries:
                        if not (entry.startswith("$ORIGIN") or entry in system_dirs):
                            fail(f"{name} has RUNPATH/RPATH entry {entry!r}, not relative "
                                 f"to $ORIGIN nor one of {system_dirs}")
                data = path.read_bytes()
                for directory in forbidden_dirs:
                    if directory.encode() in data:
                        fail(f"{name} contains the path {directory}")
            if checked < 10:
                fail(f"only {checked} ELF files found in {wheel.name}")
    print(f"[wheel] {wheel.name}: {len(names)} files, {checked} ELF files checked")


def check_venv(freeze: Path, wheelhouse: Path) -> None:
    def normal(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    installed = {}
    for line in freeze.read_text().splitlines():
        name, _, version = line.partition("==")
        installed[normal(name)] = version
    allowed = {normal(p.name.split("-")[0]) for p in wheelhouse.glob("*.whl")}
    allowed.add("torch-maia")
    if extra := sorted(set(installed) - allowed):
        fail(f"the venv holds more than torch, its dependencies and torch_maia: {extra}")
    if not installed.get("torch", "").startswith("2.13.0"):
        fail(f"the venv's torch is {installed.get('torch')}, expected 2.13.0")
    if "torch-maia" not in installed:
        fail("torch_maia is not installed in the venv")
    print(f"[wheel] venv: {', '.join(f'{n}=={v}' for n, v in sorted(installed.items()))}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("wheel", nargs="?", type=Path)
    parser.add_argument("--forbid", action="append", default=[])
    parser.add_argument("--system-dir", action="append", default=[])
    parser.add_argument("--venv-contents", type=Path)
    parser.add_argument("--wheelhouse", type=Path)
    args = parser.parse_args()
    if args.venv_contents:
        check_venv(args.venv_contents, args.wheelhouse)
    else:
        check_wheel(args.wheel, args.forbid, args.system_dir)


if __name__ == "__main__":
    main()
