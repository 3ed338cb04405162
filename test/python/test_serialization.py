"""torch.save / torch.load of maia tensors, modules and state dicts."""

import io
import os
import subprocess
import sys

import pytest
import torch


def round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, **load_kwargs)


class TestSerialization:
    def test_tensor_keeps_device_and_values(self):
        x = torch.randn(4, 5, device="maia:1")
        y = round_trip(x)
        assert y.device == torch.device("maia:1")
        torch.testing.assert_close(y.cpu(), x.cpu())

    @pytest.mark.parametrize("location", ["cpu", "maia", "maia:1"])
    def test_map_location(self, location):
        x = torch.arange(10.0, device="maia:0")
        y = round_trip(x, map_location=location)
        assert y.device == torch.device(location if location != "maia" else "maia:0")
        torch.testing.assert_close(y.cpu(), torch.arange(10.0))

    def test_module_and_state_dict(self):
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU()).maia()
        state = round_trip(model.state_dict())
        assert all(t.is_maia for t in state.values())
        copy = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU()).maia()
        copy.load_state_dict(state)
        x = torch.randn(2, 3, device="maia")
        torch.testing.assert_close(copy(x).cpu(), model(x).cpu())
        whole = round_trip(model, weights_only=False)
        assert next(whole.parameters()).is_maia

    def test_checkpoint_from_a_missing_device_is_a_clear_error(self, tmp_path):
        path = tmp_path / "on_maia1.pt"
        torch.save(torch.ones(3, device="maia:1"), path)
        code = f"import torch; torch.load({str(path)!r})"
        env = dict(os.environ, MAIA_VISIBLE_DEVICES="0")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env)
        assert out.returncode != 0
        assert "maia device index 1 is out of range" in out.stderr, out.stderr
        code = f"import torch; print(torch.load({str(path)!r}, map_location='maia:0').device)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, check=True)
        assert out.stdout.strip() == "maia:0"
