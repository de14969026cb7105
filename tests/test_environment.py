"""ingest.environment against real interpreters, real git repositories and stand-in vendor tools.

Vendor tools (nvidia-smi, rocm-smi, neuron-ls) cannot run here, so small shell scripts on PATH print what the
real tools print, in their documented formats.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import git

from ingest import environment
from ingest.environment import (
    DEFAULT_ENV_PREFIXES,
    DEFAULT_PACKAGES,
    capture,
    git_state,
    host_info,
    package_versions,
    probe_accelerators,
    python_for,
    run_environment,
)

REPO = Path(__file__).resolve().parents[1]
NO_GIT_STATE = {"commit": None, "branch": None, "dirty": None, "diff": None}


def executable(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip())
    path.chmod(0o755)
    return path


# --- interpreters and versions --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second, real interpreter: a fresh venv without torch (or anything else)."""
    where = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    return where / "bin" / "python"


def test_versions_in_this_interpreter_come_from_the_command() -> None:
    python = python_for([sys.executable, "-c", "pass"])
    assert python == os.path.abspath(sys.executable)
    versions, source = package_versions(["torch", "pytest", "surely-not-installed-kb"], python)
    assert versions["torch"] == importlib.metadata.version("torch")
    assert versions["pytest"] == importlib.metadata.version("pytest")
    assert versions["python"] == platform.python_version()
    assert "surely-not-installed-kb" not in versions
    assert source == f"command interpreter {python}"
    assert all(isinstance(value, str) for value in versions.values())


def test_a_distribution_being_installed_has_no_version_yet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pip makes the metadata folder before it writes METADATA: importlib.metadata then finds no version (None).
    (tmp_path / "kb_test_half-1.0.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    versions, _ = package_versions(["kb-test-half", "pytest"], None)
    assert "kb-test-half" not in versions and versions["pytest"] == importlib.metadata.version("pytest")


def test_every_installed_distribution_has_the_version_importlib_metadata_gives() -> None:
    names = sorted({dist.metadata["Name"] for dist in importlib.metadata.distributions() if dist.metadata["Name"]})
    versions, _ = package_versions(names, None)
    expected = {name: importlib.metadata.version(name) for name in names}
    assert len(names) > 50 and {name: versions.get(name) for name in names} == expected


def test_the_first_folder_on_the_path_wins_and_other_layouts_are_read_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, version in ((first, "2.0"), (second, "1.0")):
        (folder / "Kb_Test.Shadow-x.dist-info").mkdir(parents=True)
        (folder / "Kb_Test.Shadow-x.dist-info" / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: kb-test-shadow\nVersion: {version}\n\nVersion: 9.9 in the description\n"
        )
    (second / "kb_test_legacy.egg-info").mkdir()  # setup.py develop: PKG-INFO, not METADATA
    legacy = "Metadata-Version: 1.0\nName: kb-test-legacy\nVersion: 0.3\n"
    (second / "kb_test_legacy.egg-info" / "PKG-INFO").write_text(legacy)
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    importlib.invalidate_caches()
    versions, _ = package_versions(["kb-test-shadow", "kb_test_legacy"], None)
    assert versions["kb-test-shadow"] == importlib.metadata.version("kb-test-shadow") == "2.0"
    assert versions["kb_test_legacy"] == importlib.metadata.version("kb_test_legacy") == "0.3"


def test_odd_layouts_and_spellings_read_as_importlib_metadata_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site, egg = tmp_path / "site", tmp_path / "kb_test_egged-3.0-py3.11.egg"
    files = {
        site / "Kb_Test_Upper-1.0.DIST-INFO" / "METADATA": "Name: kb-test-upper\nVersion: 1.0\n",
        site / "kb_test_pkginfo-0.5.dist-info" / "PKG-INFO": "Name: kb-test-pkginfo\nVersion: 0.5\n",
        site / "kb_test_empty-0.7.dist-info" / "METADATA": "",  # an empty METADATA counts as none
        site / "kb_test_empty-0.7.dist-info" / "PKG-INFO": "Name: kb-test-empty\nVersion: 0.7\n",
        # a line of blanks continues a header: the headers go on
        site / "kb_test_blank-2.0.dist-info" / "METADATA": "Name: kb-test-blank\n \nVersion: 2.0\n",
        site / "kb_test_egged-1.0.dist-info" / "METADATA": "Name: kb-test-egged\nVersion: 1.0\n",
        egg / "EGG-INFO" / "PKG-INFO": "Name: kb-test-egged\nVersion: 3.0\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(sys, "path", [*sys.path, tmp_path / "a Path object"])  # a sitecustomize may add one
    importlib.invalidate_caches()
    names = ["kb-test-upper", "KB.Test.Upper", "kb_test_pkginfo", "kb-test-empty", "kb-test-blank", "Kb-Test-Egged"]
    expected = {name: importlib.metadata.version(name) for name in names}
    with monkeypatch.context() as without:  # the folders are read here, not left to importlib.metadata
        without.setitem(sys.modules, "importlib.metadata", None)
        versions, _ = package_versions(names, None)
    assert {name: versions.get(name) for name in names} == expected
    assert versions["KB.Test.Upper"] == "1.0" and versions["kb-test-empty"] == "0.7"
    monkeypatch.syspath_prepend(str(egg))  # an egg first on the path: left to importlib.metadata, which reads it
    importlib.invalidate_caches()
    versions, _ = package_versions(["kb-test-egged", "Kb-Test-Egged"], None)
    assert versions["kb-test-egged"] == versions["Kb-Test-Egged"] == "3.0"
    assert importlib.metadata.version("kb-test-egged") == "3.0"


def test_torch_build_info_is_read_without_importing_torch() -> None:
    versions, _ = package_versions(["torch"], None)
    # torch/version.py run on its own, as a cross-check that needs no `import torch` either
    location = importlib.metadata.distribution("torch").locate_file("torch/version.py")
    spec = importlib.util.spec_from_file_location("kb_test_torch_version", location)
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    assert versions["torch_git"] == build.git_version
    assert versions.get("cuda") == build.cuda  # None on this CPU build: then absent
    assert versions.get("hip") == build.hip


def test_versions_are_looked_up_in_the_commands_own_interpreter(bare_venv: Path) -> None:
    python = python_for([str(bare_venv), "-c", "pass"])
    assert python == str(bare_venv)
    versions, source = package_versions(["torch", "pytest", "numpy"], python)
    assert "torch" not in versions and "pytest" not in versions
    assert versions["python"] == platform.python_version()  # the venv was made from this same python
    assert source == f"command interpreter {bare_venv}"


def test_no_interpreter_means_this_one() -> None:
    versions, source = package_versions(["torch"], None)
    assert versions["torch"] == importlib.metadata.version("torch")
    assert source == f"kb interpreter {sys.executable}"


def test_a_broken_interpreter_falls_back_to_this_one_and_says_so(tmp_path: Path) -> None:
    broken = executable(
        tmp_path / "python3",
        """
        #!/bin/sh
        echo "Fatal Python error: init_fs_encoding" >&2
        exit 3
    """,
    )
    versions, source = package_versions(["torch"], str(broken))
    assert versions["torch"] == importlib.metadata.version("torch")
    assert source.startswith(f"kb interpreter {sys.executable}")
    assert f"{broken} failed: exit code 3: Fatal Python error" in source


def test_an_interpreter_that_prints_nonsense_falls_back(tmp_path: Path) -> None:
    chatty = executable(
        tmp_path / "python",
        """
        #!/bin/sh
        echo "hello"
    """,
    )
    versions, source = package_versions(["torch"], str(chatty))
    assert "torch" in versions
    assert source.endswith("failed: unparsable output)")


def test_a_hanging_interpreter_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "VERSIONS_TIMEOUT_S", 0.5)
    hanging = executable(
        tmp_path / "python3",
        """
        #!/bin/sh
        /bin/sleep 30
    """,
    )
    started = time.monotonic()
    versions, source = package_versions(["torch"], str(hanging))
    assert time.monotonic() - started < 5
    assert "torch" in versions
    assert source.endswith("failed: timed out after 0.5 s)")


def test_python_commands_are_recognised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert python_for([sys.executable, "-m", "torch.distributed.run", "train.py"]) == os.path.abspath(sys.executable)
    python3 = shutil.which("python3")
    assert python3 is not None
    script = executable(
        tmp_path / "train.py",
        """
        #!/usr/bin/env python3
        print("hi")
    """,
    )
    assert python_for([str(script), "--steps", "3"]) == os.path.abspath(python3)
    split = executable(
        tmp_path / "split.py",
        """
        #!/usr/bin/env -S PYTHONUNBUFFERED=1 python3 -u
        print("hi")
    """,
    )
    assert python_for([str(split)]) == os.path.abspath(python3)
    # A console script found through PATH, with its interpreter written into the shebang (as pip writes them).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable(
        bin_dir / "kb-trainer",
        f"""
        #!{sys.executable}
        import sys
    """,
    )
    long_path = executable(
        bin_dir / "kb-long",
        f"""
        #!/bin/sh
        '''exec' "{sys.executable}" "$0" "$@"
        ' '''
        import sys
    """,
    )
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert python_for(["kb-trainer", "--lr", "0.1"]) == sys.executable
    assert python_for([str(long_path)]) == sys.executable


def test_real_console_scripts_of_this_venv_are_recognised() -> None:
    torchrun = Path(sys.executable).parent / "torchrun"  # installed with torch, a test dependency
    assert torchrun.exists()
    python = python_for([str(torchrun), "--nproc-per-node", "2", "train.py"])
    assert python is not None and Path(python).parent == Path(sys.executable).parent


@pytest.mark.parametrize("argv", [["true"], ["bash", "-c", "x"], [], ["surely-not-a-command-kb"], ["sh", "x.py"]])
def test_other_commands_are_not_python(argv: list[str]) -> None:
    assert python_for(argv) is None


def test_a_script_without_a_python_shebang_is_not_python(tmp_path: Path) -> None:
    script = executable(
        tmp_path / "run.sh",
        """
        #!/bin/bash
        echo hi
    """,
    )
    assert python_for([str(script)]) is None


# --- host -----------------------------------------------------------------------------------------------


def test_host_info() -> None:
    import psutil

    info = host_info()
    assert info["hostname"]
    assert info["os"].startswith(f"{platform.system()} {platform.release()}")
    assert isinstance(info["cpu"], str) and info["cpu"]
    assert info["cpu_threads"] == psutil.cpu_count(logical=True)
    assert info["cpu_cores"] in (None, psutil.cpu_count(logical=False))
    assert info["memory_gb"] == round(psutil.virtual_memory().total / 1024**3, 1)


# --- accelerators ---------------------------------------------------------------------------------------

NVIDIA_SMI = """
    #!/bin/sh
    case "$*" in
      *--query-gpu=index,name,memory.total,driver_version,pci.bus_id,compute_cap*--format=csv,noheader,nounits*)
        printf '%s\\n' '0, NVIDIA H100 80GB HBM3, 81559, 550.54.15, 00000000:18:00.0, 9.0'
        printf '%s\\n' '1, NVIDIA H100 80GB HBM3, 81559, 550.54.15, 00000000:2A:00.0, 9.0' ;;
      *) echo "unexpected arguments: $*" >&2; exit 2 ;;
    esac
"""

# neuron-ls --json-output: one object per device; memory_size in bytes, numa_node a string, connected_to a list.
NEURON_LS_DEVICES = [
    {
        "neuron_device": 0,
        "bdf": "0000:10:1c.0",
        "cpu_affinity": "0-47,96-143",
        "numa_node": "0",
        "connected_to": [1, 3],
        "nc_count": 2,
        "memory_size": 34359738368,
        "neuroncore_ids": [0, 1],
        "neuron_processes": [],
    },
    {
        "neuron_device": 1,
        "bdf": "0000:10:1d.0",
        "cpu_affinity": "0-47,96-143",
        "numa_node": "0",
        "connected_to": [0, 2],
        "nc_count": 2,
        "memory_size": 34359738368,
        "neuroncore_ids": [2, 3],
        "neuron_processes": [],
    },
]
NEURON_LS = f"""
    #!/bin/sh
    [ "$1" = "--json-output" ] || {{ echo "unexpected arguments: $*" >&2; exit 2; }}
    printf '%s\\n' '{json.dumps(NEURON_LS_DEVICES)}'
"""

# rocm-smi --showproductname --showmeminfo vram --showdriverversion --json (byte counts are strings; a warning first)
ROCM_SMI_JSON = {
    "card0": {
        "Card Series": "AMD Instinct MI300X",
        "Card Model": "0x74a1",
        "Card Vendor": "Advanced Micro Devices, Inc. [AMD/ATI]",
        "Card SKU": "M3000100",
        "GFX Version": "gfx942",
        "VRAM Total Memory (B)": "206141652992",
        "VRAM Total Used Memory (B)": "300462080",
    },
    "system": {"Driver version": "6.8.5"},
}
ROCM_SMI = f"""
    #!/bin/sh
    echo "WARNING: AMD GPU device(s) is/are in a low-power state. Check power control/runtime_status"
    printf '%s\\n' '{json.dumps(ROCM_SMI_JSON)}'
"""


def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **scripts: str) -> Path:
    """A PATH holding only the given stand-in tools (keyword names with _ for -)."""
    bin_dir = tmp_path / "tools"
    bin_dir.mkdir(exist_ok=True)
    for name, text in scripts.items():
        executable(bin_dir / name.replace("_", "-"), text)
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def test_probes_parse_the_real_formats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools(tmp_path, monkeypatch, nvidia_smi=NVIDIA_SMI, neuron_ls=NEURON_LS, rocm_smi=ROCM_SMI)
    accelerators, probes = probe_accelerators()
    assert probes == {"nvidia-smi": "ok", "rocm-smi": "ok", "neuron-ls": "ok"}
    nvidia = [a for a in accelerators if a["vendor"] == "nvidia"]
    assert [a["index"] for a in nvidia] == [0, 1]
    assert nvidia[0] == {
        "vendor": "nvidia",
        "name": "NVIDIA H100 80GB HBM3",
        "index": 0,
        "memory_gb": 79.6,
        "driver": "550.54.15",
        "pci_bus_id": "00000000:18:00.0",
        "compute_capability": "9.0",
    }
    (amd,) = [a for a in accelerators if a["vendor"] == "amd"]
    assert amd == {
        "vendor": "amd",
        "name": "AMD Instinct MI300X",
        "index": 0,
        "memory_gb": 192.0,
        "driver": "6.8.5",
        "gfx_version": "gfx942",
    }
    neuron = [a for a in accelerators if a["vendor"] == "aws"]
    assert [(a["index"], a["cores"], a["memory_gb"], a["pci_bus_id"]) for a in neuron] == [
        (0, 2, 32.0, "0000:10:1c.0"),
        (1, 2, 32.0, "0000:10:1d.0"),
    ]


def test_probe_statuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools(
        tmp_path,
        monkeypatch,
        nvidia_smi="""
        #!/bin/sh
        echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2
        exit 9
    """,
        neuron_ls="""
        #!/bin/sh
        /bin/sleep 30
        echo "[]"
    """,
        rocm_smi="""
        #!/bin/sh
        echo "this is not json"
    """,
    )
    started = time.monotonic()
    accelerators, probes = probe_accelerators(timeout_s=0.5)
    elapsed = time.monotonic() - started
    assert accelerators == []
    assert probes["nvidia-smi"] == (
        "failed: exit code 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    )
    assert probes["neuron-ls"] == "timed out after 0.5 s"
    assert probes["rocm-smi"] == "failed: unparsable output"
    assert elapsed < 3, f"the sleeping tool (and its child) held the probe for {elapsed:.1f} s"


def test_unexpected_shapes_are_unparsable_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools(
        tmp_path,
        monkeypatch,
        nvidia_smi="""
        #!/bin/sh
        echo "0, only two fields"
    """,
        neuron_ls="""
        #!/bin/sh
        echo '{"instance": "trn1.2xlarge"}'
    """,
        rocm_smi="""
        #!/bin/sh
        echo '["card0"]'
    """,
    )
    accelerators, probes = probe_accelerators()
    assert accelerators == []
    assert set(probes.values()) == {"failed: unparsable output"}


def test_neuron_ls_without_json_output_gets_the_newer_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Neuron 2.34 replaces --json-output with --output-format json.
    tools(
        tmp_path,
        monkeypatch,
        neuron_ls=f"""
        #!/bin/sh
        [ "$1" = "--json-output" ] && {{ echo "Error: unknown flag: --json-output" >&2; exit 1; }}
        [ "$*" = "--output-format json" ] && printf '%s\\n' '{json.dumps(NEURON_LS_DEVICES[:1])}'
    """,
    )
    accelerators, probes = probe_accelerators()
    assert probes["neuron-ls"] == "ok"
    assert [a["index"] for a in accelerators] == [0]


def test_absent_tools_are_not_spawned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A file that is on PATH but not executable is not a tool: nothing can be spawned from this PATH.
    bin_dir = tools(tmp_path, monkeypatch)
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\ntouch spawned\n")
    assert probe_accelerators() == ([], {"nvidia-smi": "absent", "rocm-smi": "absent", "neuron-ls": "absent"})


# --- git ------------------------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    where = tmp_path / "repo"
    where.mkdir()
    git(where, "init", "-q", "-b", "main")
    (where / "train.py").write_text("print('step')\n")
    (where / "src").mkdir()
    (where / "src" / "model.py").write_text("LAYERS = 2\n")
    git(where, "add", ".")
    git(where, "commit", "-q", "-m", "first")
    return where


def test_git_clean(repo: Path) -> None:
    state = git_state(repo / "src")
    assert state == {"commit": git(repo, "rev-parse", "HEAD"), "branch": "main", "dirty": False, "diff": None}
    assert len(state["commit"]) == 40


def test_git_modified_staged_and_unstaged(repo: Path) -> None:
    (repo / "train.py").write_text("print('step')\nprint('changed here')\n")
    (repo / "src" / "model.py").write_text("LAYERS = 4\n")
    git(repo, "add", "src/model.py")
    state = git_state(repo)
    assert state["dirty"] is True and state["branch"] == "main"
    assert "+print('changed here')" in state["diff"]
    assert "+LAYERS = 4" in state["diff"]


def test_git_untracked_only(repo: Path) -> None:
    (repo / "notes.txt").write_text("scratch\n")
    state = git_state(repo)
    assert state["dirty"] is True
    assert "untracked" in state["diff"] and "notes.txt" in state["diff"]


def test_git_binary_change_is_a_note(repo: Path) -> None:
    (repo / "weights.bin").write_bytes(bytes(range(256)))
    git(repo, "add", "weights.bin")
    assert "Binary files" in git_state(repo)["diff"]


def test_git_detached_head(repo: Path) -> None:
    commit = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "--detach")
    state = git_state(repo)
    assert state["branch"] is None and state["commit"] == commit and state["dirty"] is False


def test_git_before_the_first_commit(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "a.py").write_text("A = 1\n")
    git(tmp_path, "add", "a.py")
    state = git_state(tmp_path)
    assert state["commit"] is None and state["branch"] == "main" and state["dirty"] is True
    assert "+A = 1" in state["diff"]


def test_git_diff_is_capped(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "DIFF_CAP_BYTES", 10_000)
    (repo / "train.py").write_text("".join(f"print({i})\n" for i in range(5_000)))
    diff = git_state(repo)["diff"]
    assert len(diff.encode()) < 10_200
    assert "[kb: diff cut at" in diff


def test_git_outside_a_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # git looks no higher, wherever tmp_path lies
    assert git_state(plain) == NO_GIT_STATE


def test_git_missing(tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert git_state(repo) == NO_GIT_STATE


# --- environment variables ------------------------------------------------------------------------------


def test_run_environment_keeps_backend_variables_and_masks_secrets() -> None:
    token = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"
    env = {
        "OMP_NUM_THREADS": "8",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "TORCHINDUCTOR_CACHE_DIR": "/tmp/inductor",
        "MASTER_ADDR": "10.0.0.1",
        "HOME": "/root",
        "USER": "someone",
        "HF_TOKEN": token,
    }
    kept = run_environment(env, DEFAULT_ENV_PREFIXES)
    assert list(kept) == [
        "CUDA_VISIBLE_DEVICES",
        "HF_TOKEN",
        "MASTER_ADDR",
        "OMP_NUM_THREADS",
        "TORCHINDUCTOR_CACHE_DIR",
    ]
    assert kept["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert kept["TORCHINDUCTOR_CACHE_DIR"] == "/tmp/inductor"
    assert kept["OMP_NUM_THREADS"] == "8"
    assert token not in kept["HF_TOKEN"]


# --- everything -----------------------------------------------------------------------------------------


def test_capture_end_to_end(repo: Path) -> None:
    started = time.monotonic()
    captured = capture(repo, [sys.executable, "-c", "pass"], env={"CUDA_VISIBLE_DEVICES": "3", "HOME": "/root"})
    assert time.monotonic() - started < 10
    assert set(captured) == {"versions", "versions_source", "hardware", "git", "environment", "python", "notes"}
    assert captured["versions"]["torch"] == importlib.metadata.version("torch")
    assert captured["versions_source"] == f"command interpreter {os.path.abspath(sys.executable)}"
    assert captured["python"] == os.path.abspath(sys.executable)
    hardware = captured["hardware"]
    assert {"hostname", "os", "cpu", "cpu_cores", "cpu_threads", "memory_gb", "accelerators", "probes"} <= set(hardware)
    assert set(hardware["probes"]) == {"nvidia-smi", "rocm-smi", "neuron-ls"}
    assert captured["git"]["branch"] == "main" and captured["git"]["dirty"] is False
    assert captured["environment"] == {"CUDA_VISIBLE_DEVICES": "3"}
    assert captured["notes"] == []


def test_capture_of_a_non_python_command(tmp_path: Path) -> None:
    captured = capture(tmp_path, ["true"], packages=["torch"], env={})
    assert captured["python"] is None
    assert captured["versions_source"] == f"kb interpreter {sys.executable}"
    assert set(captured["versions"]) >= {"torch", "python"}
    assert captured["environment"] == {}


def test_capture_never_imports_torch() -> None:
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        import ingest.environment as environment
        assert "psutil" not in sys.modules, "psutil imported with the module"
        environment.capture(Path({str(REPO)!r}), [sys.executable, "-c", "pass"])
        print("torch" in sys.modules)
    """)
    ran = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "False"


def test_defaults_name_the_backends() -> None:
    for name in ("torch", "torch-neuronx", "torch-xla", "torch-tpu", "openvino", "jax", "pytorch-triton-rocm", "vllm"):
        assert name in DEFAULT_PACKAGES
    for prefix in ("CUDA_", "NEURON_", "PJRT_", "PT_XLA_", "HSA_", "TORCH", "MASTER_ADDR"):
        assert prefix in DEFAULT_ENV_PREFIXES
