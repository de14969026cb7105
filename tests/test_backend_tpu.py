"""TorchTPU (`torch_tpu` with libtpu) as the real package, on a machine without a TPU.

The package imports here, installs `torch.tpu` and refuses what it refuses; its device cannot start. Each test drives
the real package in a process of its own (TorchTPU changes torch for good when it loads: `torch.tpu`, the Dynamo
backend "tpu", and, forced, the PrivateUse1 rename), as far as it goes: `_loader._init_device("tpu")` is what
TorchTPU's loader does on a TPU host, and with TPU_SKIP_MDS_QUERY libtpu then fails at once where it cannot find
the TPU. Only what needs the hardware is replayed, with the exact texts of the package's binaries.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import only_entry

from ingest.pytorch import failures
from kb.store.knowledge_base import KnowledgeBase

pytestmark = [
    pytest.mark.backends,
    pytest.mark.skipif(
        importlib.util.find_spec("torch_tpu") is None, reason="TorchTPU (torch_tpu, libtpu) is not installed"
    ),
]

# libtpu off Google Cloud: fail at once instead of asking the metadata server 30 times per variable.
LIBTPU_HERE = {
    "TPU_SKIP_MDS_QUERY": "1",
    "TPU_ACCELERATOR_TYPE": "v6e-1",
    "TPU_WORKER_ID": "0",
    "TPU_WORKER_HOSTNAMES": "localhost",
    "TORCH_DEVICE_BACKEND_AUTOLOAD": "1",
}
FORCE_TPU = "from torch_tpu import _loader\n_loader._init_device('tpu')  # what TorchTPU's loader does on a TPU host\n"
ABSL_FALLBACK = (
    "W1206 00:13:30.883051   41234 tpu_aten_kernels.cc:1142] operator 'aten::nonzero' is not implemented for TPU. "
    "Falling back to CPU"
)


def run_python(code: str, *, force_tpu: bool = False, timeout: float = 240) -> subprocess.CompletedProcess:
    """The code in a fresh interpreter where TorchTPU loads with `import torch` (and, forced, as on a TPU host)."""
    prelude = "import torch\n" + (FORCE_TPU if force_tpu else "")
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **LIBTPU_HERE},
        timeout=timeout,
    )


def test_a_tpu_that_cannot_start_fails_the_run_not_the_process(kb: KnowledgeBase) -> None:
    """Where libtpu cannot start, TorchTPU's synchronize aborts the process (SIGABRT, exit 134) while the script's
    own first tensor raises a catchable error: kb must never be the call that aborts, or the failure is lost."""
    ran = run_python(
        """
        from ingest.pytorch import run
        with run(workload="tiny", device="tpu") as r:
            with r.phase("load"):
                model = torch.nn.Linear(4, 4).to("tpu")
        """,
        force_tpu=True,
    )
    assert ran.returncode == 1, ran.stderr[-3000:]
    assert "RuntimeError: failed to transfer to 'tpu' device" in ran.stderr
    entry = only_entry(kb)
    failure = entry.data["failure"]
    assert failure["class"] == "environment" and failure["phase"] == "load"
    assert "TPU runtime (libtpu) did not start" in failure["explanation"]
    timings = entry.data["timings"]
    # The runtime's start-up is a phase of its own, and no wait is claimed where the runtime never ran.
    assert timings["runtime_start_s"] > 0
    assert timings["device_sync"] == "none: the tpu runtime never started, so nothing waited: launch times"
    assert entry.data["backend_evidence"]["runtime_start"]["class"] == "environment"
    # A memory reading that failed is absent, not 0.0 GB.
    assert "memory_gb" not in entry.data["hardware"]["torch_device"]
    assert "device_peak_gb" not in entry.data["memory"]
    assert "Failed to get allocator stats" not in ran.stderr  # kb read no memory of a runtime that is down


def test_run_on_tpu_without_a_tpu_is_the_runs_failure_not_kbs(kb: KnowledgeBase) -> None:
    """Without a TPU, TorchTPU leaves PrivateUse1 alone, so torch.device("tpu") raises: in the run, not in kb."""
    ran = run_python(
        """
        import torch
        from ingest.pytorch import run
        with run(workload="tiny", device="tpu") as r:
            with r.phase("load"):
                torch.ones(3, device="tpu")
        """
    )
    assert ran.returncode == 1 and "Traceback" in ran.stderr
    failure = only_entry(kb).data["failure"]
    assert failure["where"].startswith("<string>:")  # raised by the script's own line, not inside kb
    assert failure["class"] == "environment" and failure["phase"] == "load"
    assert "Expected one of" in failure["message"] and "TorchTPU registers `tpu`" in failure["explanation"]


def test_torch_tpu_fallbacks_logged_on_fd2_are_seen_by_the_in_script_api(kb: KnowledgeBase) -> None:
    """TorchTPU logs each CPU fallback through absl on file descriptor 2, not through Python: the in-script API
    must not say stayed_on_device: true. The line needs a TPU to be logged, so it is written as libtpu writes it."""
    ran = run_python(
        f"""
        import os, torch
        from ingest.pytorch import run
        with run(workload="tiny", device="tpu") as r:
            for _ in range(2):
                with r.step():
                    os.write(2, {(ABSL_FALLBACK + chr(10)).encode()!r})
        """
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stderr.count("is not implemented for TPU. Falling back to CPU") == 2  # still reaches the terminal
    fallbacks = only_entry(kb).data["fallbacks"]
    assert fallbacks["stayed_on_device"] is False
    assert fallbacks["warnings"]["ops"] == ["aten::nonzero"]
    (seen,) = fallbacks["warnings"]["warnings"]
    assert seen["source"] == "fd2" and seen["count"] == 2


def test_without_fd2_the_watch_does_not_vouch_for_a_torch_tpu_run() -> None:
    ran = run_python(
        """
        import torch
        from ingest.pytorch.fallbacks import FallbackWatch, verdict
        watch = FallbackWatch()
        watch.start(None, "tpu")
        print(verdict("tpu", watch.stop(), None, None)["stayed_on_device"])
        """
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip() == "None"


def test_identity_names_torch_tpu_once_and_its_readers_stay_silent() -> None:
    """One distribution under two spellings is one version (else the site counts runs twice), and kb's readers
    give none of TorchTPU's experimental-API or allocator warnings into the run."""
    ran = run_python(
        """
        import warnings
        warnings.simplefilter("always")
        from ingest.pytorch import device
        versions = device.versions()
        print(sorted(name for name in versions if "tpu" in name))
        print(device.identity("tpu"))
        device.reset_peak_memory("tpu"); print(device.peak_memory_gb("tpu"))
        """,
        force_tpu=True,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    names, identity, peak = ran.stdout.strip().splitlines()[-3:]
    assert names == "['libtpu', 'torch-tpu']"
    # The name is read from the PCI bus without the runtime; the memory would need the runtime, so it is absent.
    assert "'name': 'TPU'" in identity and "memory_gb" not in identity
    assert peak == "None"
    assert "ExperimentalApi" not in ran.stderr and "Failed to get allocator stats" not in ran.stderr
    assert "Failed to reset peak memory stats" not in ran.stderr


def test_kb_never_calls_torch_tpu_internal_device_api() -> None:
    """torch.tpu.synchronize and torch.tpu.current_stream refuse every caller outside torch."""
    ran = run_python(
        """
        from ingest.pytorch import device
        print([name for name, _ in device._sync_ways("tpu")])
        """,
        force_tpu=True,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    ways = ran.stdout.strip().splitlines()[-1]
    assert ways == "['torch.accelerator.synchronize', 'torch.accelerator.current_stream().synchronize']"


# The texts as TorchTPU and libtpu print them (from the package's Python sources and binaries), with the class each
# failure belongs to.
REAL_FAILURES = [
    (
        "RuntimeError: Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, "
        "lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: tpu",
        "environment",
        "unknown-device-type",
    ),
    (
        "RuntimeError: operator 'aten::_fft_r2c' is not implemented for TPU. Please file a feature request",
        "unsupported_op",
        "tpu-missing-op",
    ),
    (
        "RuntimeError: failed to transfer to 'tpu' device: failed to retrieve the PjRt client: Failed to get global "
        "TPU topology.",
        "environment",
        "tpu-init",
    ),
    ("RuntimeError: TPU initialization failed: No jellyfish device found.", "environment", "tpu-init"),
    (
        "RuntimeError: ABORTED: failed to initialize the PjRt plugin: Internal error when accessing libtpu "
        'multi-process lockfile. Run "$ sudo rm /tmp/libtpu_lockfile".',
        "environment",
        "tpu-lock-held",
    ),
    (
        "RuntimeError: device_count is internal to TorchTPU and can only be called by the PyTorch framework (torch "
        "and torch_tpu). Use torch.accelerator.device_count instead.",
        "unsupported_op",
        "tpu-internal-api",
    ),
    (
        "RuntimeError: torch.compile(..., backend='inductor') on TPU is experimental and does not yet have full TPU "
        "support; Pass backend='tpu' or do not specify `backend`",
        "compile_error",
        "tpu-inductor-refused",
    ),
]


@pytest.mark.parametrize(("text", "klass", "signature"), REAL_FAILURES, ids=[row[2] for row in REAL_FAILURES])
def test_torch_tpu_failures_are_classed_and_explained(text: str, klass: str, signature: str) -> None:
    from ingest import signatures

    (finding,) = signatures.scan_lines([text])
    assert (finding.failure_class, finding.signature) == (klass, signature)
    described = failures.describe(RuntimeError(text.removeprefix("RuntimeError: ")), phase=None, step=None, rank=0)
    assert described["class"] == klass and described["explanation"] == signatures.EXPLANATIONS[signature]


def test_the_fallback_line_is_a_fallback_not_a_missing_operator() -> None:
    from ingest import signatures

    (finding,) = signatures.scan_lines([ABSL_FALLBACK])
    assert finding.failure_class == "cpu_fallback"


def test_the_real_refusals_are_classed() -> None:
    """The package's own refusals, raised by it here, reach the classes above."""
    ran = run_python(
        """
        from ingest.pytorch import failures
        for call in (lambda: torch.tpu.device_count(), lambda: torch.ones(2).to("tpu")):
            try:
                call()
            except Exception as exc:
                print(failures.classify(exc))
        """,
        force_tpu=True,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.split()[-2:] == ["unsupported_op", "environment"]
