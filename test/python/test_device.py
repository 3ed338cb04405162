"""maia as a PyTorch device: identity, dispatch keys, device selection,
generated methods, bad input."""

import os
import subprocess
import sys

import pytest
import torch


class TestIdentity:
    def test_device_string_resolves_to_privateuse1(self):
        assert torch._C._get_privateuse1_backend_name() == "maia"
        device = torch.device("maia:1")
        assert device.type == "maia" and device.index == 1
        x = torch.empty(2, device="maia")
        assert x.device == torch.device("maia:0")

    def test_tensors_dispatch_on_privateuse1_keys_not_in_tree_maia(self):
        x = torch.ones(2, device="maia", requires_grad=True)
        keys = str(torch._C._dispatch_keys(x))
        assert "PrivateUse1" in keys and "AutogradPrivateUse1" in keys
        # The in-tree MAIA key is named "MAIA"; no key of the tensor is.
        assert not any(k == "MAIA" or k == "AutogradMAIA" for k in
                       keys.strip("DispatchKeySet()").replace(" ", "").split(","))
        with torch.autocast("maia", dtype=torch.bfloat16):
            assert torch.is_autocast_enabled("maia")

    def test_import_torch_alone_loads_maia(self):
        code = "import torch; x = torch.ones(2, device='maia'); print(x.device, x.is_maia)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)
        assert out.stdout.strip() == "maia:0 True"

    @pytest.mark.parametrize("autoload", ["1", "0"])
    def test_import_torch_maia_first_works(self, autoload):
        code = "import torch_maia, torch; print(torch.ones(2, device='maia').device)"
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD=autoload)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "maia:0"

    def test_generated_methods(self):
        x = torch.arange(4.0)
        y = x.maia()
        assert y.is_maia and not x.is_maia
        assert torch.equal(y.cpu(), x)
        assert x.maia(1).device == torch.device("maia:1")
        module = torch.nn.Linear(2, 2).maia()
        assert module.weight.is_maia
        assert y.untyped_storage().is_maia
        packed = torch.nn.utils.rnn.pack_sequence([torch.ones(3), torch.ones(2)])
        assert packed.maia().is_maia


class TestDeviceSelection:
    def test_count_current_and_set(self):
        assert torch.maia.is_available()
        assert torch.maia.device_count() == 2
        assert torch.accelerator.current_accelerator() == torch.device("maia")
        assert torch.accelerator.device_count() == 2
        torch.maia.set_device(1)
        try:
            assert torch.maia.current_device() == 1
            assert torch.accelerator.current_device_index() == 1
            assert torch.empty(1, device="maia").device == torch.device("maia:1")
        finally:
            torch.maia.set_device(0)

    def test_device_context_restores(self):
        with torch.maia.device(1):
            assert torch.maia.current_device() == 1
            with torch.maia.device("maia:0"):
                assert torch.maia.current_device() == 0
            assert torch.maia.current_device() == 1
        assert torch.maia.current_device() == 0

    def test_properties(self):
        props = torch.maia.get_device_properties(1)
        assert props["name"] == torch.maia.get_device_name(1) == "MAIA simulated device"
        assert props["total_memory"] > 0 and props["core_count"] >= 1
        assert props["compute_capability"].startswith("maia-sim-1.0")


class TestBadInput:
    def test_device_index_out_of_range(self):
        # RuntimeError, as PyTorch's own backends raise (not IndexError)
        with pytest.raises(RuntimeError, match="maia device index 5 is out of range"):
            torch.empty(2, device="maia:5")
        with pytest.raises(RuntimeError, match="out of range"):
            torch.maia.set_device(7)
        with pytest.raises(RuntimeError, match="out of range"):
            torch.ones(2).to("maia:9")
        with pytest.raises(RuntimeError, match="out of range"):
            torch.maia.Stream(device=3)
        assert torch.maia.current_device() == 0

    def test_tensors_on_different_devices_in_one_op(self):
        a = torch.ones(3, device="maia:0")
        b = torch.ones(3, device="maia:1")
        with pytest.raises(RuntimeError, match="same device.*maia:0 and maia:1"):
            torch.add(a, b)
        with pytest.raises(RuntimeError, match="same device"):
            torch.add(a, torch.ones(3))
        host, on_maia = torch.ones(3, 3), torch.ones(3, 3, device="maia")
        for operands in [(host, on_maia), (on_maia, host)]:
            with pytest.raises(RuntimeError, match="mm: expected all tensors to be on the same"):
                torch.mm(*operands)
        with pytest.raises(RuntimeError, match="same maia device.*cpu, cpu \\(operands\\)"):
            torch.addmm(on_maia, host, host)
        with pytest.raises(RuntimeError, match="same maia device.*cpu \\(result\\)"):
            torch.mm(on_maia, on_maia, out=torch.empty(3, 3))

    def test_results_are_allocated_on_the_operands_device(self):
        # Results are allocated without a dispatch: on the operands' device,
        # not the current one, which stays as it was.
        torch.maia.set_device(0)
        a = torch.arange(16.0).view(4, 4)
        a1 = a.to("maia:1")
        results = [(a1 + a1, a + a), (a1 @ a1, a @ a), (torch.relu(a1 - 5), torch.relu(a - 5))]
        for result, expected in results:
            assert result.device == torch.device("maia:1")
            torch.testing.assert_close(result.cpu(), expected)
        stats = torch.maia.memory_stats(1)
        assert stats["allocated_bytes.all.current"] > 0
        assert torch.maia.current_device() == 0

    def test_every_maia_kernel_is_registered_for_a_real_operator(self):
        """The dispatcher accepts an impl for an overload nobody defined (it
        waits for a def), so a misspelt overload silently leaves the real one
        on the host fallback (bitwise_and.out instead of .Tensor_out was)."""
        registered = torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1")
        assert len(registered) > 300
        unknown = []
        for entry in registered:
            name, _, overload = entry.partition(".")
            try:
                torch._C._dispatch_find_schema_or_throw(name, overload)
            except RuntimeError:
                unknown.append(entry)
        assert unknown == []

    def test_unsupported_dtype(self):
        with pytest.raises(TypeError, match="maia tensors do not support dtype Float8_e4m3fn"):
            torch.empty(2, dtype=torch.float8_e4m3fn, device="maia")

    # GCC 12's TSan runtime cannot fork a multithreaded process: the child
    # dies with "ThreadSanitizer: dup thread with used id" before any maia
    # code runs (die_after_fork=0 does not help), so the parent waits forever.
    @pytest.mark.skipif("libtsan" in os.environ.get("LD_PRELOAD", ""),
                        reason="TSan runtime cannot fork a multithreaded process")
    def test_forked_child_gets_a_clear_error(self):
        torch.ones(1, device="maia")  # initialized in this process
        code = (
            "import multiprocessing as mp, torch\n"
            "torch.ones(1, device='maia')\n"
            "def child(q):\n"
            "    try:\n"
            "        torch.ones(1, device='maia'); q.put('no error')\n"
            "    except RuntimeError as e:\n"
            "        q.put(str(e))\n"
            "if __name__ == '__main__':\n"
            "    q = mp.get_context('fork').Queue()\n"
            "    p = mp.get_context('fork').Process(target=child, args=(q,)); p.start()\n"
            "    print(q.get()); p.join()\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, timeout=120)
        assert "forked child" in out.stdout, out.stdout + out.stderr

    def test_spawned_child_works(self, tmp_path):
        code = (
            "import multiprocessing as mp, torch\n"
            "def child(q):\n"
            "    q.put((torch.ones(2, device='maia') * 3).sum().item())\n"
            "if __name__ == '__main__':\n"
            "    torch.ones(1, device='maia')\n"
            "    ctx = mp.get_context('spawn'); q = ctx.Queue()\n"
            "    p = ctx.Process(target=child, args=(q,)); p.start()\n"
            "    print(q.get()); p.join()\n"
        )
        script = tmp_path / "spawn_child.py"  # spawn re-imports __main__ from a file
        script.write_text(code)
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             check=True, timeout=120)
        assert out.stdout.strip() == "6.0"

    def test_no_devices_visible(self):
        env = dict(os.environ, MAIA_VISIBLE_DEVICES="")
        code = "import torch; print(torch.maia.is_available(), torch.maia.device_count())"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env=env)
        assert out.stdout.strip() == "False 0"
