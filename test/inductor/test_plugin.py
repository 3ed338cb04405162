"""How the plugin plugs in: registration, caching, debugging knobs, errors."""

import os
import subprocess
import sys

import pytest
import torch
from compile_support import assert_compiled_matches


def run_python(script, env=None, timeout=600):
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_registered_through_upstream_registries():
    assert_compiled_matches(lambda x: x + 1, torch.randn(4))  # triggers registration
    from torch._dynamo.device_interface import get_interface_for_device
    from torch._inductor.codegen.common import (
        get_custom_backend_config_for_device,
        get_device_op_overrides,
        get_scheduling_for_device,
        get_wrapper_codegen_for_device,
    )

    import maia_inductor
    from maia_inductor.scheduling import MaiaScheduling
    from torch_maia._dynamo_interface import MaiaInterface
    from maia_inductor.wrapper import MaiaWrapperCodegen

    assert get_scheduling_for_device("maia") is MaiaScheduling
    assert get_wrapper_codegen_for_device("maia") is MaiaWrapperCodegen
    assert get_interface_for_device("maia") is MaiaInterface
    assert get_device_op_overrides("maia").synchronize() == "torch.maia.synchronize()"
    config = get_custom_backend_config_for_device("maia")
    assert config.compiler_version.startswith("maia-compile ")
    assert config.target_cpu and len(config.plugin_hash) == 16
    assert issubclass(MaiaInterface.Stream, torch.Stream)
    assert issubclass(MaiaInterface.Event, torch.Event)
    assert MaiaInterface.Worker.get_device_properties(0).multi_processor_count >= 1
    assert maia_inductor._registered


def test_dynamo_knows_maia_before_any_compile_and_import_torch_stays_light():
    out = run_python(
        "import sys, torch\n"
        "light = not any(m in sys.modules for m in ('torch._dynamo', 'maia_inductor'))\n"
        "from torch._dynamo.device_interface import get_interface_for_device\n"
        "interface = get_interface_for_device('maia')\n"
        "print(light, interface.__name__, interface.device_count() == torch.maia.device_count(),"
        " 'maia_inductor' in sys.modules)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "MaiaInterface", "True", "False"]


def test_torch_maia_does_not_import_the_compiler():
    # The dependency is one way: maia_inductor -> torch_maia. torch.maia finds
    # the compiler's code generators through an entry point.
    import ast
    import pathlib

    import torch_maia

    root = pathlib.Path(torch_maia.__file__).parent
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.split(".")[0] == "maia_inductor" for n in names), path
    from importlib.metadata import entry_points

    (backend,) = entry_points(group=torch.maia.COMPILER_ENTRY_POINTS)
    assert backend.value == "maia_inductor:inductor_codegen"


def test_output_code_log_shows_wrapper_and_mlir():
    result = run_python(
        "import torch\n"
        "x = torch.randn(100, device='maia')\n"
        "torch.compile(lambda x: x.sin() * 2)(x)\n",
        env={"TORCH_LOGS": "output_code"})
    assert result.returncode == 0, result.stderr
    assert "maia_async_compile.kernel(" in result.stderr
    assert "func.func @maia_poi_fused_mul_sin" in result.stderr
    assert ".run((" in result.stderr  # a constant grid: static shapes


def test_dump_dir_receives_mlir_and_binaries(tmp_path):
    result = run_python(
        "import torch\n"
        "x = torch.randn(8, 30, device='maia')\n"
        "torch.compile(lambda x: x.softmax(-1))(x)\n",
        env={"MAIA_INDUCTOR_DUMP_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in tmp_path.iterdir())
    assert any(n.endswith(".mlir") and "softmax" in n for n in names), names
    assert any(n.endswith(".maiabin") for n in names), names


def test_config_patch_reaches_the_compile_threads(tmp_path):
    # config.patch holds for the calling thread only; kernels compile on
    # other threads, so the settings must be read where the compile is asked.
    import maia_inductor.config as maia_config

    with maia_config.patch(dump_dir=str(tmp_path)):
        assert_compiled_matches(lambda x: x.cos() * 3, torch.randn(16, 7))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert any(n.endswith(".mlir") for n in names), names
    assert any(n.endswith(".maiabin") for n in names), names


def test_warm_start_hits_the_caches(tmp_path):
    script = ("import torch\n"
              "from torch._dynamo.utils import counters\n"
              "x = torch.randn(64, 64, device='maia')\n"
              "y = torch.compile(lambda x: (x @ x).relu().sum(-1))(x)\n"
              "print('HITS', counters['inductor']['fxgraph_cache_hit'])\n")
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}
    cold = run_python(script, env=env)
    warm = run_python(script, env=env)
    assert cold.returncode == 0 and warm.returncode == 0, cold.stderr + warm.stderr
    assert "HITS 0" in cold.stdout and "HITS 1" in warm.stdout
    binaries = list((tmp_path / "maia").rglob("*.maiabin"))
    assert binaries, "kernel binaries are cached under Inductor's cache dir"


def test_a_graph_cached_for_another_core_count_is_compiled_again(tmp_path):
    # Static launch grids are sized to the device's cores: a hit across core
    # counts ran a 256^3 GEMM on one program of a 2-core device.
    script = ("import torch\n"
              "from torch._dynamo.utils import counters\n"
              "from torch._inductor.codecache import PyCodeCache\n"
              "x = torch.randn(256, 256, device='maia')\n"
              "torch.compile(lambda x: (x @ x).relu())(x)\n"
              "print('HITS', counters['inductor']['fxgraph_cache_hit'])\n"
              "code = ''.join(open(m.__file__).read() for m in PyCodeCache.modules)\n"
              "print('GRIDS', sorted(set(__import__('re').findall(r'\\.run\\((\\(.*?\\))', code))))\n")
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}
    one = run_python(script, env={**env, "MAIA_NUM_CORES": "1"})
    two = run_python(script, env={**env, "MAIA_NUM_CORES": "2"})
    again = run_python(script, env={**env, "MAIA_NUM_CORES": "2"})
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert "HITS 0" in one.stdout and "GRIDS ['(1, 1)']" in one.stdout, one.stdout
    assert "HITS 0" in two.stdout and "GRIDS ['(2, 1)']" in two.stdout, two.stdout
    assert "HITS 1" in again.stdout, again.stdout


def test_binary_cache_is_keyed_by_source_and_compiler():
    from maia_inductor import compiler

    a = compiler.cache_key("func.func @k() { return }", {"opt_level": 2})
    assert a == compiler.cache_key("func.func @k() { return }", {"opt_level": 2})
    assert a != compiler.cache_key("func.func @k() { return } ", {"opt_level": 2})
    assert a != compiler.cache_key("func.func @k() { return }", {"opt_level": 3})


def test_compile_error_names_the_group_and_keeps_the_mlir():
    from maia_inductor.compiler import MaiaCompileError, compile_to_binary

    with pytest.raises(MaiaCompileError, match="fused group maia_poi_broken") as error:
        compile_to_binary("maia_poi_broken", "func.func @maia_poi_broken( {")
    kept = str(error.value).split("MLIR kept in ")[1].split(")")[0]
    assert open(kept).read() == "func.func @maia_poi_broken( {"


def test_kernels_launch_on_the_current_stream():
    # A compiled graph enqueues on the stream it is called on: work on a
    # side stream is ordered after work already queued there.
    fn = torch.compile(lambda x: x * 2 + 1)
    x = torch.randn(1 << 16, device="maia")
    fn(x)  # compile outside the stream
    side = torch.maia.Stream()
    with torch.maia.stream(side):
        y = fn(x)
        done = torch.maia.Event()
        done.record(side)
    done.synchronize()
    torch.testing.assert_close(y.cpu(), x.cpu() * 2 + 1)


@pytest.mark.skipif(torch.maia.device_count() < 2, reason="needs two maia devices")
def test_graph_on_the_second_device_stays_there():
    x = torch.randn(100, 30, device="maia:1")
    linear = torch.nn.Linear(30, 5).to("maia:1")
    fn = torch.compile(lambda x: linear((x.exp() + 1) * 2).softmax(-1))
    y = fn(x)
    assert y.device == torch.device("maia:1")
    expected = torch.nn.functional.linear((x.cpu().exp() + 1) * 2, linear.weight.cpu(),
                                          linear.bias.cpu()).softmax(-1)
    torch.testing.assert_close(y.cpu(), expected, atol=1e-5, rtol=1e-5)


def _listed_private_apis():
    import pathlib
    import re

    doc = pathlib.Path(__file__).parents[2] / "docs" / "inductor.md"
    section = doc.read_text().split("## Private torch APIs in use", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([\w.]+)` \|", section, re.M)


def _resolve(dotted):
    """The object a dotted name denotes; instance attributes that a class
    sets in __init__ resolve to the class."""
    import importlib
    import inspect
    import re

    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for i, attr in enumerate(parts[split:]):
            if hasattr(obj, attr):
                obj = getattr(obj, attr)
            elif inspect.isclass(obj) and i == len(parts[split:]) - 1 and re.search(
                    rf"self\.{attr}\b[^=\n]*=", inspect.getsource(obj)):
                return obj
            else:
                raise AttributeError(f"{dotted}: no {attr}")
        return obj
    raise ImportError(dotted)


def _package_sources():
    import pathlib

    import maia_inductor
    import torch_maia

    roots = [pathlib.Path(maia_inductor.__file__).parent, pathlib.Path(torch_maia.__file__).parent]
    return [p for root in roots for p in root.rglob("*.py")]


def _private_names_used():
    """Dotted torch names with a private part that the plugin and torch_maia
    import or reach through `torch.`."""
    import ast

    used = set()
    for path in _package_sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch."):
                used.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                parts, value = [node.attr], node.value
                while isinstance(value, ast.Attribute):
                    parts.append(value.attr)
                    value = value.value
                if isinstance(value, ast.Name) and value.id == "torch":
                    used.add(".".join(["torch", *reversed(parts)]))
    private = {name for name in used
               if any(p.startswith("_") and not p.endswith("__") for p in name.split(".")[1:])}
    # keep the longest chains only (torch._C._x, not also torch._C)
    return {n for n in private if not any(o != n and o.startswith(n + ".") for o in private)}


def test_private_torch_apis_are_listed_and_exist():
    listed = _listed_private_apis()
    assert len(listed) > 30
    missing_upstream = []
    for name in listed:
        try:
            _resolve(name)
        except (ImportError, AttributeError) as error:
            missing_upstream.append(f"{name}: {error}")
    assert not missing_upstream, missing_upstream
    unlisted = sorted(_private_names_used() - set(listed))
    assert not unlisted, f"private torch APIs used but not listed in docs/inductor.md: {unlisted}"
    import re

    sources = "\n".join(p.read_text() for p in _package_sources())
    unused = [n for n in listed if not re.search(rf"\b{n.rsplit('.', 1)[1]}\b", sources)]
    assert not unused, f"listed in docs/inductor.md but not used: {unused}"


def test_private_api_check_can_fail():
    with pytest.raises(AttributeError):
        _resolve("torch._inductor.codegen.common.OpOverrides._no_such_helper")
    with pytest.raises(AttributeError):
        _resolve("torch._inductor.codegen.common.Kernel._no_such_attribute")


def _overrides_protocol_violations(overrides):
    """OpsHandler ops that `overrides` implements with a signature that
    cannot take OpsHandler's arguments (the protocol check halide.py does
    statically, here at test time)."""
    import inspect

    from torch._inductor.ops_handler import OpsHandler

    violations = []
    for name, spec in vars(OpsHandler).items():
        impl = vars(overrides).get(name)
        if name.startswith("_") or not callable(spec) or impl is None:
            continue
        fn = impl.__func__ if isinstance(impl, staticmethod) else impl
        if getattr(fn, "is_unimplemented", False):
            continue
        arguments = [p for p in inspect.signature(spec).parameters if p != "self"]
        try:
            inspect.signature(fn).bind(*arguments)
        except TypeError as error:
            violations.append(f"{name}{inspect.signature(fn)}: {error}")
    return violations


def test_overrides_follow_the_ops_handler_protocol():
    from maia_inductor.overrides import MaiaOverrides

    assert _overrides_protocol_violations(MaiaOverrides) == []

    class Broken(MaiaOverrides):
        @staticmethod
        def where(condition, a):  # OpsHandler.where takes (condition, input, other)
            return a

    assert len(_overrides_protocol_violations(Broken)) == 1
