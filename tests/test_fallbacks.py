"""CPU fallback, end to end, on a real PrivateUse1 device ("kbdev", tests/privateuse1/kbdev.cpp) without hardware.

kbdev implements tensor creation, views, copies and add.Tensor; every other operator goes through PyTorch's own
boxed CPU fallback, which warns once per operator in the words MPS uses. Backends that cannot exist here (MPS,
torch_xla) are imitated through their documented interfaces: the warning text and the metrics module.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import logging
import shutil
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest
import torch

from ingest.pytorch.fallbacks import (
    NOT_APPLICABLE,
    FallbackWatch,
    count_cpu_round_trips,
    placement_audit,
    verdict,
)

REPO = Path(__file__).resolve().parent.parent
DEVICE_HELPER = REPO / "tests" / "privateuse1" / "device.py"
MPS_TEXT = (
    "The operator 'aten::nonzero' is not currently supported on the MPS backend and will fall back to run on the "
    "CPU. This may have performance implications."
)
KBDEV_TEXT = "is not currently supported on the kbdev backend and will fall back to run on the CPU"


def _load_device() -> str:
    spec = importlib.util.spec_from_file_location("kb_test_privateuse1_device", DEVICE_HELPER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load()


@pytest.fixture(scope="session")
def kbdev() -> str:
    assert shutil.which("c++"), "the kbdev test device is built with a C++ compiler (inductor needs one too)"
    return _load_device()


# A fresh process: the device warns once per operator per process, and the user's stderr is what we check.
CHILD = f"""
import importlib.util, json, sys
import torch
from ingest.pytorch.fallbacks import FallbackWatch, placement_audit, verdict

spec = importlib.util.spec_from_file_location("device", {str(DEVICE_HELPER)!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
device = module.load()
torch.manual_seed(0)
model = torch.nn.Linear(4, 2).to(device)
x = torch.randn(3, 4).to(device)
watch = FallbackWatch()
watch.start()
y = model(x)
found = watch.stop()
print(json.dumps(verdict(device, found, placement_audit(model, y, device), None)))
"""


def test_a_linear_forward_on_kbdev_falls_back_and_the_user_still_sees_it(kbdev: str) -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    section = json.loads(done.stdout)
    assert section["stayed_on_device"] is False
    assert "aten::addmm.out" in section["warnings"]["ops"]
    [entry] = [w for w in section["warnings"]["warnings"] if w["op"] == "aten::addmm.out"]
    assert KBDEV_TEXT in entry["message"]
    assert entry["at_least_once"] is True and entry["source"] == "warning"
    assert "aten::addmm.out" in section["summary"]
    assert any("fell back to the CPU" in line for line in section["evidence"])
    assert section["placement"]["outputs"] == {"total": 1, "off_target": 0, "examples": []}
    # The watch chained to the previous hook: the user's stderr still has the warning.
    assert "The operator 'aten::addmm.out'" in done.stderr and KBDEV_TEXT in done.stderr


@pytest.mark.filterwarnings("always")
def test_the_watch_passes_the_warning_on_to_python_warnings(kbdev: str, recwarn: pytest.WarningsRecorder) -> None:
    a = torch.arange(6.0).reshape(2, 3).to(kbdev)
    with FallbackWatch() as watch:
        product = a * a  # no native kernel: mul runs through the CPU fallback
    assert torch.equal(product.cpu(), torch.arange(6.0).reshape(2, 3) ** 2)
    assert watch.result is not None and watch.result["ops"] == ["aten::mul.out"]
    assert any("'aten::mul.out'" in str(w.message) and KBDEV_TEXT in str(w.message) for w in recwarn)


def test_the_native_operator_stays_on_the_device(kbdev: str) -> None:
    a = torch.arange(6.0).reshape(2, 3).to(kbdev)
    b = torch.ones(2, 3).to(kbdev)
    watch = FallbackWatch()
    watch.start()
    total = a + b
    found = watch.stop()
    # Earlier tests in this process fell back (mul): the registry keeps that, and it is not this window's doing.
    found.pop("before_start", None)
    assert found == {"warnings": [], "ops": []}
    assert total.device.type == kbdev
    assert torch.equal(total.cpu(), torch.arange(6.0).reshape(2, 3) + 1)
    traffic = count_cpu_round_trips(lambda: a + b, device=kbdev)
    assert traffic["round_trips"] == 0 and traffic["fallback_ops"] == {}
    section = verdict(kbdev, found, placement_audit(None, total, kbdev), traffic)
    assert section["stayed_on_device"] is True
    assert section["summary"] == (
        "All work stayed on kbdev: no CPU-fallback warnings and every checked tensor (1) on kbdev."
    )


@dataclasses.dataclass
class Output:
    logits: torch.Tensor
    extra: dict


def test_placement_audit_names_what_was_left_on_the_cpu(kbdev: str) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(3, 2)).to(kbdev)
    model[0].bias = torch.nn.Parameter(torch.zeros(2))  # replaced after .to(): on the CPU
    model.register_buffer("scale", torch.ones(2))  # registered after .to(): on the CPU
    model[0].mask = torch.ones(3)  # a plain attribute: .to() never moves it
    outputs = (torch.ones(2).to(kbdev), Output(logits=torch.ones(2), extra={"ok": torch.ones(1).to(kbdev)}))

    audit = placement_audit(model, outputs, kbdev)
    assert audit["target"] == "kbdev"
    assert audit["parameters"] == {"total": 2, "off_target": 1, "examples": ["0.bias@cpu"]}
    assert audit["buffers"] == {"total": 1, "off_target": 1, "examples": ["scale@cpu"]}
    assert audit["attributes"] == {"total": 1, "off_target": 1, "examples": ["0.mask@cpu"]}
    assert audit["outputs"] == {"total": 3, "off_target": 1, "examples": ["output[1].logits@cpu"]}

    # An index in the target counts: the device's tensors are all on index 0.
    other = placement_audit(None, [torch.ones(1).to(kbdev)] * 7, f"{kbdev}:1")
    assert other["outputs"]["off_target"] == 7
    assert other["outputs"]["examples"] == [f"output[{i}]@{kbdev}:0" for i in range(5)]

    section = verdict(kbdev, None, audit, None)
    assert section["stayed_on_device"] is False
    assert section["summary"] == "Not all work stayed on kbdev: 4 of 7 tensors were not on kbdev."
    assert "placement: 1 of 2 parameters not on kbdev (0.bias@cpu)" in section["evidence"]


def test_the_mps_warning_is_parsed_and_reported_at_least_once() -> None:
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        watch = FallbackWatch()
        watch.start()
        for _ in range(3):
            warnings.warn(MPS_TEXT, UserWarning, stacklevel=1)
        warnings.warn("something unrelated", UserWarning, stacklevel=1)
        logging.getLogger("torch_neuronx.eager").warning("Falling back to CPU for aten::_unique2")
        found = watch.stop()
    assert len(shown) == 4  # nothing hidden from the user
    mps, neuron = found["warnings"]
    assert mps == {"op": "aten::nonzero", "message": MPS_TEXT, "source": "warning", "at_least_once": True}
    assert neuron == {
        "op": "aten::_unique2",
        "message": "Falling back to CPU for aten::_unique2",
        "source": "log",
        "count": 1,
    }
    assert found["ops"] == ["aten::_unique2", "aten::nonzero"]
    assert "xla_fallback_ops" not in found


def test_filters_that_ignore_the_warning_make_the_watch_inconclusive() -> None:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The operator .* is not currently supported")
        watch = FallbackWatch()
        watch.start()
        warnings.warn(MPS_TEXT, UserWarning, stacklevel=1)
        found = watch.stop()
    assert found == {"warnings": [], "ops": [], "hidden_by_filters": True}
    assert verdict("mps", found, None, None)["stayed_on_device"] is None


def _fake_torch_xla(monkeypatch: pytest.MonkeyPatch, counters: dict[str, int]) -> None:
    """torch_xla.debug.metrics as documented: counter_names(), counter_value(name), metrics_report()."""
    metrics = types.ModuleType("torch_xla.debug.metrics")
    metrics.counter_names = lambda: list(counters)
    metrics.counter_value = counters.get
    metrics.metrics_report = lambda: "".join(f"Counter: {k}\n  Value: {v}\n" for k, v in counters.items())
    debug = types.ModuleType("torch_xla.debug")
    debug.metrics = metrics
    root = types.ModuleType("torch_xla")
    root.debug = debug
    for name, module in (("torch_xla", root), ("torch_xla.debug", debug), ("torch_xla.debug.metrics", metrics)):
        monkeypatch.setitem(sys.modules, name, module)


def test_torch_xla_counters_count_only_this_runs_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    counters = {"aten::nonzero": 2, "aten::_local_scalar_dense": 5, "CachedCompile": 1}
    _fake_torch_xla(monkeypatch, counters)
    watch = FallbackWatch()
    watch.start()
    counters.update({"aten::nonzero": 5, "aten::median": 1, "aten::_local_scalar_dense": 9, "CachedCompile": 4})
    # PT_XLA_DEBUG's analysis line, routed through logging.
    logging.getLogger("torch_xla").warning(
        "pt-xla-profiler: Op(s) not lowered: aten::_ctc_loss, aten::_ctc_loss_backward,  Please open a GitHub issue "
        "with the above op lowering requests."
    )
    found = watch.stop()
    assert found["xla_fallback_ops"] == {"aten::median": 1, "aten::nonzero": 3}
    assert found["ops"] == ["aten::_ctc_loss", "aten::_ctc_loss_backward", "aten::median", "aten::nonzero"]
    assert [w["op"] for w in found["warnings"]] == ["aten::_ctc_loss", "aten::_ctc_loss_backward"]
    section = verdict("xla:0", found, None, None)
    assert section["stayed_on_device"] is False
    assert "torch_xla counters: 4 CPU fallback calls of 2 operators" in section["evidence"]


def test_a_run_without_new_xla_fallbacks_reports_none(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_torch_xla(monkeypatch, {"aten::nonzero": 2})
    with FallbackWatch() as watch:
        pass
    assert watch.result == {"warnings": [], "xla_fallback_ops": {}, "ops": []}
    assert verdict("xla", watch.result, None, None)["stayed_on_device"] is True


def test_round_trips_do_not_apply_on_the_cpu() -> None:
    calls = []
    section = count_cpu_round_trips(lambda: calls.append(1), device="cpu")
    assert section == {"window_steps": 0, "round_trips": 0, "per_step": 0.0, "by_op": {}, "note": NOT_APPLICABLE}
    assert calls == []


@pytest.mark.filterwarnings("ignore:The operator")
def test_item_on_kbdev_is_a_counted_round_trip(kbdev: str) -> None:
    scalar = torch.tensor(2.0).to(kbdev)
    section = count_cpu_round_trips(lambda: (scalar + scalar).item(), steps=3, device=kbdev)
    assert section["window_steps"] == 3
    assert section["by_op"] == {"aten::_local_scalar_dense": 3}
    assert section["round_trips"] == 3 and section["per_step"] == 1.0
    # kbdev has no _local_scalar_dense kernel: the profiler sees it take the CPU fallback on every step.
    assert section["fallback_ops"] == {"aten::_local_scalar_dense": 3}

    moved = count_cpu_round_trips(lambda: scalar.cpu(), steps=2, device=kbdev)
    assert moved["by_op"] == {"aten::copy_": 2} and moved["fallback_ops"] == {}


def test_round_trips_never_raise(kbdev: str) -> None:
    def broken() -> None:
        raise ValueError("no")

    assert count_cpu_round_trips(broken, device=kbdev) == {"window_steps": 3, "error": "ValueError: no"}


CLEAN_WATCH = {"warnings": [], "ops": []}
CLEAN_PLACEMENT = {"target": "cuda", "outputs": {"total": 2, "off_target": 0, "examples": []}}
TRAFFIC = {
    "window_steps": 3,
    "round_trips": 3,
    "per_step": 1.0,
    "by_op": {"aten::_local_scalar_dense": 3},
    "fallback_ops": {},
}


@pytest.mark.parametrize(
    ("target", "watch", "placement", "profiler", "stayed"),
    [
        ("cpu", CLEAN_WATCH, CLEAN_PLACEMENT, None, None),
        ("cuda", None, None, None, None),
        ("cuda", None, None, TRAFFIC, None),  # the profiler alone cannot vouch for the run
        ("cuda", CLEAN_WATCH, CLEAN_PLACEMENT, TRAFFIC, True),
        ("cuda:0", CLEAN_WATCH, None, None, True),
        ("cuda", {"warnings": [], "ops": [], "hidden_by_filters": True}, None, None, None),
        (
            "cuda",
            {"warnings": [{"op": None, "message": "falling back to CPU", "source": "log", "count": 1}], "ops": []},
            CLEAN_PLACEMENT,
            None,
            False,
        ),
        (
            "cuda",
            CLEAN_WATCH,
            {"target": "cuda", "outputs": {"total": 2, "off_target": 1, "examples": ["output@cpu"]}},
            None,
            False,
        ),
        ("cuda", CLEAN_WATCH, CLEAN_PLACEMENT, {**TRAFFIC, "fallback_ops": {"aten::nonzero": 3}}, False),
        ("cuda", CLEAN_WATCH, CLEAN_PLACEMENT, {"window_steps": 3, "error": "RuntimeError: busy"}, True),
    ],
)
def test_verdict_table(
    target: str, watch: dict | None, placement: dict | None, profiler: dict | None, stayed: bool | None
) -> None:
    section = verdict(target, watch, placement, profiler)
    assert section["stayed_on_device"] is stayed
    assert section["summary"].endswith(".") and section["evidence"]
    for key, piece in (("warnings", watch), ("placement", placement), ("profiler", profiler)):
        assert section.get(key) == piece
    if target == "cpu":
        assert section["summary"] == "The target is the CPU, so CPU fallback does not apply."
    elif stayed is False:
        assert section["summary"].startswith("Not all work stayed on cuda: ")
    elif stayed is None:
        assert "not known" in section["summary"]
    json.dumps(section)


def test_a_printed_torch_xla_metrics_report_names_its_fallbacks(tmp_path: Path) -> None:
    """torch_xla's metrics report, as a run prints it: each `aten::` counter is an operator run on the CPU, except
    `.item()`'s `aten::_local_scalar_dense`, a transfer."""
    from ingest.fallback_text import may_fall_back, ops_named, scan_output

    report = tmp_path / "output.log"
    report.write_text(
        "Metric: CompileTime\n  TotalSamples: 4\nCounter: CachedCompile\n  Value: 9\n"
        "Counter: aten::_local_scalar_dense\n  Value: 3\nCounter: aten::_unique2\n  Value: 12\n"
        "Counter: aten::nonzero\n  Value: 12\nCounter: xla::add\n  Value: 40\n"
    )
    found = scan_output(report)
    assert [op for _, line in found for op in ops_named(line)] == ["aten::_unique2", "aten::nonzero"]
    # Under `kb record` alone the entry names no backend: an installed torch_xla is reason enough to look.
    assert may_fall_back(None, {"torch-xla": "2.9.0"}) and not may_fall_back(None, {"torch": "2.13.0"})
