"""Device and backend identity: the traps in backend version strings, precision knobs, memory readers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from ingest.pytorch import device


@pytest.mark.parametrize(
    ("version", "flavour"),
    [
        ("2.13.3.0", "native TorchNeuron (Neuron 2.33 and later)"),
        ("2.14.3.0", "native TorchNeuron (Neuron 2.33 and later)"),
        ("2.9.0.2.15.1", "xla-based (torch-neuronx before Neuron 2.33)"),
        ("2.1.2.2.20.0", "xla-based (torch-neuronx before Neuron 2.33)"),
        ("1.13.1.1.13.0", "xla-based (torch-neuronx before Neuron 2.33)"),
        ("2.9.0", "unknown"),
    ],
)
def test_torch_neuronx_versions_name_the_library_they_are(version: str, flavour: str) -> None:
    assert device.neuron_flavour(version) == flavour


def install_fake_distribution(site: Path, name: str, version: str, summary: str, module: str) -> None:
    """A real installed-distribution layout (dist-info with METADATA, RECORD, top_level.txt), as pip leaves it."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {summary}\n")
    (info / "top_level.txt").write_text(f"{module}\n")
    (info / "RECORD").write_text(f"{module}/__init__.py,,\n{info.name}/METADATA,,\n")
    (site / module).mkdir()
    (site / module / "__init__.py").write_text("")


def test_backend_notes_say_which_package_provides_torch_tpu_and_which_neuronx(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake_distribution(tmp_path, "torch_tpu", "0.1.1", "PyTorch on Cloud TPUs", "torch_tpu")
    install_fake_distribution(tmp_path, "torch_neuronx", "2.9.0.2.15.1", "Neuron for PyTorch (XLA)", "torch_neuronx")
    monkeypatch.syspath_prepend(str(tmp_path))
    notes = device.backend_notes()
    assert notes["torch_tpu"] == "import torch_tpu comes from the distribution torch_tpu: PyTorch on Cloud TPUs"
    assert notes["torch-neuronx"] == "xla-based (torch-neuronx before Neuron 2.33)"
    assert device.versions()["torch-tpu"] == "0.1.1"
    assert "torch_tpu" not in device.versions()  # one distribution, one version


def test_precision_knobs_follow_the_settings() -> None:
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        with torch.autocast("cpu", dtype=torch.bfloat16):
            knobs = device.precision()
        assert knobs["float32_matmul_precision"] == "high"
        assert knobs["autocast_cpu"] == "torch.bfloat16"
    finally:
        torch.set_float32_matmul_precision(before)
    assert "autocast_cpu" not in device.precision()


def test_the_cpu_reports_no_device_memory_and_the_host_peak() -> None:
    assert device.accelerator_type("cpu") == "cpu"
    assert device.identity("cpu") == {"type": "cpu"}
    assert device.peak_memory_gb("cpu") is None
    assert 0 < device.host_peak_rss_gb() < 64
    assert device.versions()["torch"] == torch.__version__
    assert device.versions()["python"] == sys.version.split()[0]


def test_a_device_type_this_torch_does_not_know_is_the_runs_to_find_out(tmp_path: Path) -> None:
    """torch.device("tpu") raises where no backend registered `tpu` (TorchTPU on a host without a TPU): never inside
    kb's own __init__, where the run would not start and no entry would be written."""
    from ingest.pytorch import run

    r = run(device="tpu", out=tmp_path)
    assert r.device_type == "tpu"
    # No way to wait for a device that does not exist: the entry says its times are launch times.
    assert device.Sync("tpu").method == device.NO_WAY and device.NO_WAY.endswith("launch times")
    assert device.Sync("tpu", enabled=False).method == device.SYNC_OFF
