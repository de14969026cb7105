"""What a recorded run ran on: package versions, host and accelerators, git state, environment variables.

`kb record` calls `capture` in a thread while the command runs, so everything here is quick and nothing
raises: a part that fails is noted in the result (a probe status, the versions source, a git error, a
line in `notes`) and the rest is still recorded. Versions come from distribution metadata, looked up in
the interpreter that runs the command; torch itself is never imported (that takes seconds).
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from kb.secrets.redact import redact_env

DEFAULT_PACKAGES: tuple[str, ...] = (
    "torch",
    "torchvision",
    "torchaudio",
    "triton",
    "pytorch-triton",  # the triton that PyTorch nightlies depend on
    "pytorch-triton-rocm",
    "torch-neuronx",
    "neuronx-cc",
    "libneuronxla",
    "optimum-neuron",
    "torch-xla",
    "jax",
    "jaxlib",
    "libtpu",
    "torch-tpu",  # Google's TorchTPU (github.com/google-pytorch/torch_tpu): project name "torch_tpu", normalised
    "openvino",  # a torch.compile backend (backend="openvino")
    "transformers",
    "accelerate",
    "torchtitan",
    "datasets",
    "numpy",
    "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu13",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cuda-runtime-cu13",
    "nvidia-cuda-runtime",  # CUDA 13 wheels dropped the -cu13 suffix for the runtime
    "deepspeed",
    "flash-attn",
    "xformers",
    "vllm",
)

# A variable is kept when its name starts with one of these; full names (MASTER_ADDR, RANK, ...) match themselves.
DEFAULT_ENV_PREFIXES: tuple[str, ...] = (
    "CUDA_",
    "NVIDIA_",
    "NCCL_",
    "CUBLAS_",
    "CUDNN_",
    "HIP_",
    "ROCM_",
    "ROCR_",
    "HSA_",
    "NEURON_",
    "XLA_",
    "PT_XLA_",  # torch_xla's debug switches (PT_XLA_DEBUG, PT_XLA_DEBUG_LEVEL, PT_XLA_DEBUG_FILE)
    "PJRT_",
    "TPU_",
    "LIBTPU_",
    "JAX_",
    "TORCH",  # also TORCHINDUCTOR_, TORCHELASTIC_, TORCH_
    "PYTORCH_",
    "INDUCTOR",
    "TRITON_",
    "OMP_",
    "MKL_",
    "KMP_",
    "HF_",
    "TRANSFORMERS_",
    "TOKENIZERS_",
    "TF_CPP_",
    "LD_LIBRARY_PATH",
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
)

VERSIONS_TIMEOUT_S = 5.0
GIT_TIMEOUT_S = 5.0
DIFF_CAP_BYTES = 5 * 1024 * 1024
GIB = 1024**3

# python, python3, python3.11, python3.13t (free-threaded)
_PYTHON_NAME = re.compile(r"python(\d+(\.\d+)*t?)?")

# Runs in the command's interpreter (as `-c`) and, exec'd, in this one: one lookup, two places.
# Distributions are found by their .dist-info folders on sys.path as importlib.metadata finds them (path
# entries in order, each folder's names as listed, names compared normalised, suffixes in any case), and the
# version is METADATA's (else PKG-INFO's) Version header. Importing importlib.metadata (with email, zipfile,
# csv) costs more than the whole look, so it is asked only for names in a layout this does not read: an
# .egg-info or .egg in a folder, or an egg or zip file that is itself on the path.
_LOOKUP_SOURCE = """
def lookup(names):
    import os
    import platform
    import re
    import sys

    def key(name):
        return re.sub(r"[-_.]+", "_", name).lower()

    def header_version(folder):
        for name in ("METADATA", "PKG-INFO"):  # as importlib.metadata reads them: an empty file counts as none
            try:
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                    text = handle.read()
            except OSError:
                continue
            if not text:
                continue
            for line in text.split("\\n"):
                if not line.rstrip("\\r"):
                    return None  # the headers end at the first empty line
                if line[:8].lower() == "version:":
                    return line[8:].strip()
            return None
        return None  # an install has made the folder and not yet written METADATA

    wanted = {}  # normalised name -> every spelling asked for
    for name in names:
        wanted.setdefault(key(name), []).append(name)
    versions = {"python": platform.python_version()}
    version_py = None
    settled, elsewhere = set(), []
    for place in sys.path:
        if len(settled) == len(wanted):
            break
        try:
            place = os.fspath(place)  # a sitecustomize may have put a Path there
        except TypeError:
            continue
        if not isinstance(place, str):
            continue
        folder = place or "."
        if place.lower().endswith(".egg") or os.path.isfile(folder):  # an egg or a zip on the path
            elsewhere.extend(k for k in wanted if k not in settled)
            settled.update(wanted)
            continue
        try:
            listing = os.listdir(folder)
        except OSError:
            continue
        for item in listing:
            stem, dot, kind = item.lower().rpartition(".")
            if not dot or kind not in ("dist-info", "egg-info", "egg"):
                continue
            found = key(stem.partition("-")[0])
            if found not in wanted or found in settled:
                continue
            settled.add(found)
            if kind != "dist-info":
                elsewhere.append(found)
                continue
            version = header_version(os.path.join(folder, item))
            if version is not None:
                versions.update(dict.fromkeys(wanted[found], version))
                if found == "torch":
                    version_py = os.path.join(folder, "torch", "version.py")
    if elsewhere:
        try:
            from importlib import metadata
        except ImportError:  # before Python 3.8: those go without a version
            elsewhere = []
        for found in elsewhere:
            try:
                version = metadata.version(wanted[found][0])
            except Exception:
                continue
            if isinstance(version, str):  # None while an install has made the folder and not yet written METADATA
                versions.update(dict.fromkeys(wanted[found], version))
                if found == "torch":
                    try:
                        version_py = str(metadata.distribution("torch").locate_file("torch/version.py"))
                    except Exception:
                        pass
    return {"versions": versions, "torch_version_py": version_py}
"""
_LOOKUP_MAIN = "\nimport json, sys\nprint(json.dumps(lookup(json.loads(sys.argv[1]))))\n"

# torch/version.py assignments worth keeping, and the key each gets in `versions`.
_TORCH_BUILD_KEYS = {"cuda": "cuda", "hip": "hip", "rocm": "rocm", "xpu": "xpu", "git_version": "torch_git"}

T = TypeVar("T")


def _run(
    argv: Sequence[str], timeout: float, cwd: str | Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run argv to completion; on timeout kill its whole process group and raise subprocess.TimeoutExpired."""
    # A session of its own: a tool that forks (a shell script, a wrapper) is killed with all its children,
    # otherwise a surviving grandchild keeps the pipes open and the wait outlasts the timeout.
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):  # already gone
            os.killpg(proc.pid, signal.SIGKILL)
        # Stuck in the kernel (a hung driver), it cannot be reaped now, and waiting would hang the recording.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=1.0)
        raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def _first_line(*texts: bytes) -> str:
    for text in texts:
        for line in text.decode("utf-8", "replace").splitlines():
            if line.strip():
                return line.strip()[:160]
    return ""


def _seconds(value: float) -> str:
    return f"{value:g} s"


# --- the interpreter and its packages -------------------------------------------------------------------


def _python_named(path: str) -> bool:
    return _PYTHON_NAME.fullmatch(os.path.basename(path)) is not None


def _shebang_python(script: str) -> str | None:
    try:
        with open(script, "rb") as handle:
            head = handle.read(1024)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    lines = head[2:].decode("utf-8", "replace").splitlines()
    words = lines[0].split() if lines else []
    if not words:
        return None
    interpreter, args = words[0], words[1:]
    if os.path.basename(interpreter) == "env":
        # `#!/usr/bin/env [-S] [NAME=value ...] python3 [args]`: the first plain word is the program.
        program = next((word for word in args if not word.startswith("-") and "=" not in word), None)
        found = shutil.which(program) if program and _python_named(program) else None
        return os.path.abspath(found) if found else None
    if os.path.basename(interpreter) == "sh" and len(lines) > 1 and lines[1].startswith("'''exec'"):
        # pip's launcher when the interpreter path is too long or has spaces: `'''exec' "/path/python" "$0" ...`
        try:
            interpreter = shlex.split(lines[1])[1]
        except (ValueError, IndexError):
            return None
    if _python_named(interpreter) and os.access(interpreter, os.X_OK):
        return interpreter
    return None


def python_for(argv: Sequence[str]) -> str | None:
    """The interpreter that will run argv when it is a Python command, else None.

    Recognised: argv[0] is a python executable (`python3 train.py`, `python -m torch.distributed.run`), or a
    script or console entry point (torchrun, accelerate) whose shebang names one, directly or through env.
    """
    if not argv:
        return None
    found = shutil.which(argv[0])
    if found is None:
        return None
    # Not realpath: a venv's python is a symlink to the base interpreter, and only the link's path selects the venv.
    path = os.path.abspath(found)
    if _python_named(path):
        return path
    return _shebang_python(path)


def _interpreter_identity(python: str) -> tuple[str, str | None]:
    # The binary plus the venv it starts in (found as CPython does: pyvenv.cfg beside it or one folder up).
    path = os.path.abspath(python)
    folder = os.path.dirname(path)
    venv = next(
        (
            os.path.realpath(where)
            for where in (folder, os.path.dirname(folder))
            if os.path.isfile(os.path.join(where, "pyvenv.cfg"))
        ),
        None,
    )
    return os.path.realpath(path), venv


def _torch_build_info(version_py: str | None) -> dict[str, str]:
    """cuda/hip/rocm/xpu/git_version from torch/version.py, read as source so that torch is not imported."""
    if not version_py:
        return {}
    try:
        tree = ast.parse(Path(version_py).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    info: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if (
            isinstance(target, ast.Name)
            and target.id in _TORCH_BUILD_KEYS
            and isinstance(value, ast.Constant)
            and value.value is not None
        ):
            info[_TORCH_BUILD_KEYS[target.id]] = str(value.value)
    return info


def _versions_from(found: Any) -> dict[str, str]:
    if not isinstance(found, dict) or not isinstance(found.get("versions"), dict):
        raise TypeError("unparsable output")
    versions = {str(name): str(version) for name, version in found["versions"].items()}
    version_py = found.get("torch_version_py")
    return {**versions, **_torch_build_info(version_py if isinstance(version_py, str) else None)}


def _lookup_here(packages: Sequence[str]) -> dict[str, str]:
    namespace: dict[str, Any] = {}
    exec(_LOOKUP_SOURCE, namespace)  # our own constant source, the one the subprocess runs
    return _versions_from(namespace["lookup"](list(packages)))


def _lookup_in(python: str, packages: Sequence[str]) -> dict[str, str]:
    # cwd "/": `-c` puts the current folder on sys.path, and a project's own json.py or *.dist-info must not count.
    ran = _run([python, "-c", _LOOKUP_SOURCE + _LOOKUP_MAIN, json.dumps(list(packages))], VERSIONS_TIMEOUT_S, cwd="/")
    if ran.returncode != 0:
        raise RuntimeError(f"exit code {ran.returncode}: {_first_line(ran.stderr, ran.stdout)}".rstrip(": "))
    lines = ran.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        found = json.loads(lines[-1])  # the last line: a sitecustomize may print before it
    except (IndexError, ValueError):
        raise ValueError("unparsable output") from None
    return _versions_from(found)


def package_versions(packages: Sequence[str], python: str | None) -> tuple[dict[str, str], str]:
    """Versions of the installed distributions among `packages` (plus "python" and torch's build info).

    Looked up in `python` (a subprocess) unless it is None or this very interpreter. Returns the versions and
    where they came from: "command interpreter <path>" or "kb interpreter <path>", the latter saying why
    when the command's interpreter could not be asked.
    """
    here = f"kb interpreter {sys.executable}"
    if python is None:
        return _lookup_here(packages), here
    if _interpreter_identity(python) == _interpreter_identity(sys.executable):
        return _lookup_here(packages), f"command interpreter {python}"
    try:
        return _lookup_in(python, packages), f"command interpreter {python}"
    except subprocess.TimeoutExpired:
        reason = f"timed out after {_seconds(VERSIONS_TIMEOUT_S)}"
    except (OSError, RuntimeError, TypeError, ValueError) as exc:
        reason = str(exc) or type(exc).__name__
    return _lookup_here(packages), f"{here} (asking the command interpreter {python} failed: {reason})"


# --- the host -------------------------------------------------------------------------------------------


def _os_release() -> str | None:
    try:
        text = Path("/etc/os-release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.partition("=")[2].strip().strip("\"'") or None
    return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    if sys.platform == "darwin":  # platform.processor() says only "arm" on Apple silicon
        try:
            brand = _run(["sysctl", "-n", "machdep.cpu.brand_string"], 2.0).stdout.decode().strip()
        except (OSError, subprocess.SubprocessError):
            brand = ""
        if brand:
            return brand
    return platform.processor() or platform.machine()


def _attempt(read: Callable[[], T], errors: tuple[type[Exception], ...]) -> T | None:
    try:
        return read()
    except errors:  # odd platforms and containers: a blank field beats a missing record
        return None


def host_info() -> dict[str, Any]:
    """hostname, os, cpu, cpu_cores (physical), cpu_threads (logical) and memory_gb (total, GiB)."""
    import psutil  # here, not at the top: importing this module stays cheap

    uname = platform.uname()
    os_name = " ".join(part for part in (uname.system, uname.release, uname.machine) if part)
    if uname.system == "Darwin":
        distro = f"macOS {platform.mac_ver()[0]}" if platform.mac_ver()[0] else None
    else:
        distro = _os_release()
    errors = (OSError, RuntimeError, ValueError, psutil.Error)
    memory = _attempt(lambda: psutil.virtual_memory().total, errors)
    return {
        "hostname": socket.gethostname() or uname.node,
        "os": f"{os_name}, {distro}" if distro else os_name,
        "cpu": _cpu_model() or uname.machine,
        "cpu_cores": _attempt(lambda: psutil.cpu_count(logical=False), errors),
        "cpu_threads": _attempt(lambda: psutil.cpu_count(logical=True), errors),
        "memory_gb": round(memory / GIB, 1) if memory else None,
    }


# --- accelerators ---------------------------------------------------------------------------------------


def _gib(value: Any, unit: int) -> float | None:
    try:
        return round(float(value) * unit / GIB, 1)
    except (TypeError, ValueError):
        return None


def _parse_nvidia_smi(out: str) -> list[dict[str, Any]]:
    devices = []
    for line in out.splitlines():
        if not line.strip():
            continue
        index, _, rest = line.partition(",")
        # The name is the only field that could hold a comma, so split the other fields off around it.
        name, memory, driver, bus, capability = rest.rsplit(",", 4)
        fields = [field.strip() for field in (name, memory, driver, bus, capability)]
        name, memory, driver, bus, capability = [None if f.startswith("[") or not f else f for f in fields]
        devices.append(
            {
                "vendor": "nvidia",
                "name": name,
                "index": int(index),
                "memory_gb": _gib(memory, 1024**2),
                "driver": driver,
                "pci_bus_id": bus,
                "compute_capability": capability,
            }
        )
    return devices


def _parse_rocm_smi(out: str) -> list[dict[str, Any]]:
    # rocm-smi may print warnings before the JSON: {"card0": {"Card Series": ..., ...}, "system": {...}}
    data, _ = json.JSONDecoder().raw_decode(out, out.index("{"))
    driver = data.get("system", {}).get("Driver version")
    devices = []
    cards = sorted((int(match[1]), key) for key in data if (match := re.fullmatch(r"card(\d+)", key)))
    for index, key in cards:
        fields = {str(name).lower(): value for name, value in data[key].items()}  # "Card series" vs "Card Series"
        name = next(
            (fields[k] for k in ("card series", "card model", "card sku", "marketing name") if fields.get(k)), None
        )
        devices.append(
            {
                "vendor": "amd",
                "name": name,
                "index": index,
                "memory_gb": _gib(fields.get("vram total memory (b)"), 1),
                "driver": driver,
                "gfx_version": fields.get("gfx version"),
            }
        )
    return devices


def _neuron_driver() -> str | None:
    try:
        return Path("/sys/module/neuron/version").read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _parse_neuron_ls(out: str) -> list[dict[str, Any]]:
    # --json-output: a list with one object per device (neuron_device, bdf, nc_count, memory_size in bytes, ...).
    # The format that replaces it (Neuron 2.34+) wraps the devices in an object; take its list of devices.
    data = json.loads(out)
    if isinstance(data, dict):
        data = next(
            value
            for value in data.values()
            if isinstance(value, list)
            and value
            and all(isinstance(item, dict) and "neuron_device" in item for item in value)
        )
    driver = _neuron_driver()
    return [
        {
            "vendor": "aws",
            "name": device.get("name"),
            "index": int(device["neuron_device"]),
            "memory_gb": _gib(device.get("memory_size"), 1),
            "driver": driver,
            "cores": device.get("nc_count"),
            "pci_bus_id": device.get("bdf"),
        }
        for device in data
    ]


# Tool -> (argument lists to try in order while the previous one exits non-zero, parser of stdout).
_PROBES: dict[str, tuple[tuple[tuple[str, ...], ...], Callable[[str], list[dict[str, Any]]]]] = {
    "nvidia-smi": (
        (
            (
                "--query-gpu=index,name,memory.total,driver_version,pci.bus_id,compute_cap",
                "--format=csv,noheader,nounits",
            ),
        ),
        _parse_nvidia_smi,
    ),
    "rocm-smi": ((("--showproductname", "--showmeminfo", "vram", "--showdriverversion", "--json"),), _parse_rocm_smi),
    "neuron-ls": ((("--json-output",), ("--output-format", "json")), _parse_neuron_ls),
}


def _probe(tool: str, path: str, timeout_s: float) -> tuple[list[dict[str, Any]], str]:
    variants, parse = _PROBES[tool]
    deadline = time.monotonic() + timeout_s  # the timeout covers all of a tool's tries together
    failures = []
    for args in variants:
        try:
            ran = _run([path, *args], deadline - time.monotonic())
        except subprocess.TimeoutExpired:
            return [], f"timed out after {_seconds(timeout_s)}"
        except OSError as exc:
            return [], f"failed: {exc.strerror or exc}"
        if ran.returncode == 0:
            break
        failures.append(f"exit code {ran.returncode}: {_first_line(ran.stderr, ran.stdout)}".rstrip(": "))
    else:
        return [], "failed: " + "; ".join(failures)  # each try's reason: which flag this version lacks is unknown
    try:
        return parse(ran.stdout.decode("utf-8", "replace")), "ok"
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, StopIteration):
        return [], "failed: unparsable output"  # vendor output varies by version: a note, not a crash


class _InTurn(Executor):
    """Each call made at once, in this thread."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


def _pool(workers: int, prefix: str) -> Executor:
    """A thread pool, or calls in turn once the end of the process has shut concurrent.futures (a run written from
    an atexit hook)."""
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=prefix)
    try:
        pool.submit(int).result()
    except RuntimeError:
        pool.shutdown()
        return _InTurn()
    return pool


def probe_accelerators(timeout_s: float = 5.0) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Ask the vendor tools on PATH, in parallel, which accelerators there are.

    Returns the accelerators ({vendor, name, index, memory_gb, driver, ...}) and, per tool, "absent", "ok",
    "failed: <reason>" or "timed out after <timeout> s". Tools that are not on PATH are not spawned.
    """
    paths = {tool: shutil.which(tool) for tool in _PROBES}
    present = {tool: path for tool, path in paths.items() if path}
    probes = {tool: "absent" for tool in _PROBES}
    accelerators: list[dict[str, Any]] = []
    if not present:
        return accelerators, probes
    with _pool(len(present), "kb-probe") as pool:
        futures = {tool: pool.submit(_probe, tool, path, timeout_s) for tool, path in present.items()}
        for tool, future in futures.items():
            found, probes[tool] = future.result()
            accelerators.extend(found)
    return accelerators, probes


# --- git ------------------------------------------------------------------------------------------------


def _git(git: str, cwd: Path, deadline: float, *args: str) -> subprocess.CompletedProcess[bytes]:
    # No optional locks: a status must not take index.lock from under the user's own git commands.
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    return _run([git, *args], deadline - time.monotonic(), cwd=cwd, env=env)


def _diff(git: str, cwd: Path, deadline: float, commit: str | None, untracked: list[str]) -> str:
    # Without a first commit there is no HEAD: diff against the empty tree instead.
    base = commit or _git(git, cwd, deadline, "hash-object", "-t", "tree", "/dev/null").stdout.decode().strip()
    ran = _git(git, cwd, deadline, "diff", "--no-color", "--no-ext-diff", base)
    if ran.returncode != 0:
        raise RuntimeError(f"git diff: {_first_line(ran.stderr)}")
    # Cut after a whole line: a token cut in two is no longer recognised by the masking that follows.
    cut = ran.stdout.rfind(b"\n", 0, DIFF_CAP_BYTES) + 1 if len(ran.stdout) > DIFF_CAP_BYTES else DIFF_CAP_BYTES
    text = ran.stdout[: cut or DIFF_CAP_BYTES].decode("utf-8", "replace")
    if len(ran.stdout) > DIFF_CAP_BYTES:
        text += f"\n[kb: diff cut at {DIFF_CAP_BYTES // 1024 // 1024} MB of {len(ran.stdout)} bytes]\n"
    if untracked:
        text += "\n[kb: untracked files, not in the diff]\n" + "".join(f"{path}\n" for path in untracked)
    return text


def git_state(cwd: Path) -> dict[str, Any]:
    """{commit, branch, dirty, diff} of the work tree containing cwd; all None outside a repository or without git.

    branch is None on a detached HEAD; diff is `git diff HEAD` (staged and unstaged, cut at 5 MB) followed by
    the untracked files, or None when the tree is clean. A failure other than "not a repository" adds "error".
    """
    state: dict[str, Any] = {"commit": None, "branch": None, "dirty": None, "diff": None}
    git = shutil.which("git")
    if git is None:
        return state
    deadline = time.monotonic() + GIT_TIMEOUT_S  # for all the git calls together
    try:
        ran = _git(git, cwd, deadline, "status", "--porcelain=v2", "--branch")
    except subprocess.TimeoutExpired:
        return {**state, "error": f"git timed out after {_seconds(GIT_TIMEOUT_S)}"}
    except OSError as exc:
        return {**state, "error": f"git status: {exc.strerror or exc}"}
    if ran.returncode != 0:
        message = _first_line(ran.stderr)
        return state if "not a git repository" in message else {**state, "error": f"git status: {message}"}
    changed, untracked = False, []
    for line in ran.stdout.decode("utf-8", "replace").splitlines():
        if line.startswith("# branch.oid "):
            oid = line.removeprefix("# branch.oid ")
            state["commit"] = None if oid == "(initial)" else oid
        elif line.startswith("# branch.head "):
            head = line.removeprefix("# branch.head ")
            state["branch"] = None if head == "(detached)" else head
        elif line.startswith("? "):
            untracked.append(line[2:])
        elif line and not line.startswith("#"):
            changed = True
    state["dirty"] = changed or bool(untracked)
    if state["dirty"]:
        try:
            state["diff"] = _diff(git, cwd, deadline, state["commit"], untracked)
        except subprocess.TimeoutExpired:
            state["error"] = f"git timed out after {_seconds(GIT_TIMEOUT_S)}"
        except (OSError, RuntimeError) as exc:
            state["error"] = str(exc)
    return state


# --- environment variables ------------------------------------------------------------------------------


def run_environment(env: Mapping[str, str], prefixes: Sequence[str]) -> dict[str, str]:
    """The variables whose names start with one of `prefixes`, secrets masked, sorted by name."""
    kept = {name: value for name, value in env.items() if name.startswith(tuple(prefixes))}
    return dict(sorted(redact_env(kept).items()))


# --- everything -----------------------------------------------------------------------------------------


def capture(
    cwd: Path,
    argv: Sequence[str] | None,
    packages: Sequence[str] = DEFAULT_PACKAGES,
    env_prefixes: Sequence[str] = DEFAULT_ENV_PREFIXES,
    env: Mapping[str, str] | None = None,
    probe_timeout_s: float = 5.0,
    git_of: Callable[[], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Everything above for a command about to run (or running) in cwd; the slow parts run in parallel.

    git_of, when given, finds the git state instead of the work tree holding cwd (see ingest.provenance).

    Returns {"versions", "versions_source", "hardware" (host info, "accelerators", "probes"), "git",
    "environment", "python" (the command's interpreter or None), "notes" (one line per part that raised)}.
    """
    notes: list[str] = []

    def settle(part: str, get: Callable[[], T], fallback: T) -> T:
        try:
            return get()
        except Exception as exc:  # a bug or an odd host costs one part of the record, not the run
            notes.append(f"{part}: {type(exc).__name__}: {exc}")
            return fallback

    python = settle("python", lambda: python_for(argv or ()), None)
    with _pool(4, "kb-capture") as pool:
        versions_job = pool.submit(package_versions, packages, python)
        git_job = pool.submit(git_of or (lambda: git_state(cwd)))
        probes_job = pool.submit(probe_accelerators, probe_timeout_s)
        host_job = pool.submit(host_info)
        environment = settle(
            "environment", lambda: run_environment(os.environ if env is None else env, env_prefixes), {}
        )
        versions, versions_source = settle("versions", versions_job.result, ({}, "not looked up"))
        accelerators, probes = settle("accelerators", probes_job.result, ([], {}))
        host = settle("host", host_job.result, {})
        git = settle("git", git_job.result, {"commit": None, "branch": None, "dirty": None, "diff": None})
    return {
        "versions": versions,
        "versions_source": versions_source,
        "hardware": {**host, "accelerators": accelerators, "probes": probes},
        "git": git,
        "environment": environment,
        "python": python,
        "notes": notes,
    }
