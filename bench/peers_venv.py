"""The peers' venv (MLflow, W&B and two profilers, pinned, under ~/.cache/kb/) and timed child processes.

A child is timed from start to exit and its peak memory read from the kernel (`wait4`'s ru_maxrss: the
largest resident set of the child and of any process it waited for), so that kb and its peers are measured
alike, each as the process a user would start.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any, TypeVar

from bench.timing import alternate, user_env

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
VENV = Path.home() / ".cache" / "kb" / "bench-peers-venv"
# mlflow-skinny leaves out the SQL store's packages; SQLite is MLflow's local store (its file store is frozen).
PINS = (
    "mlflow-skinny==3.17.2",
    "sqlalchemy==2.1.9",
    "alembic==1.20.1",
    "wandb==0.31.0",
    "py-spy==0.4.3",
    "pyinstrument==5.1.3",
)
INSTALL_TIMEOUT_S = 900


def python() -> Path:
    return VENV / "bin" / "python"


def installed() -> bool:
    return _marker().is_file() and python().is_file()


def _marker() -> Path:
    return VENV / (".installed-" + "-".join(pin.replace("==", "_") for pin in PINS))


def ensure() -> Path:
    """The venv's Python, made once (a few minutes) and then reused; raises with pip's last line if it fails."""
    if installed():
        return python()
    print(f"installing {', '.join(PINS)} into {VENV} (once) ...", file=sys.stderr, flush=True)
    shutil.rmtree(VENV, ignore_errors=True)
    VENV.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, capture_output=True, text=True)
        subprocess.run(
            [str(python()), "-m", "pip", "install", "-q", "--disable-pip-version-check", *PINS],
            check=True, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(VENV, ignore_errors=True)
        lines = (exc.stderr or "").strip().splitlines()
        raise RuntimeError(f"the peers' venv could not be made: {lines[-1] if lines else exc}") from None
    except subprocess.TimeoutExpired:
        shutil.rmtree(VENV, ignore_errors=True)
        raise RuntimeError(f"the peers' venv could not be made in {INSTALL_TIMEOUT_S} s") from None
    _marker().touch()
    return python()


def env(**extra: str) -> dict[str, str]:
    """A user's environment for a child (bench.timing.user_env), kept off the network and quiet."""
    return user_env(
        PYTHONPATH=str(REPO),  # `-m bench.peers_jobs` from any folder, in either venv
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        MLFLOW_DISABLE_TELEMETRY="true",
        DO_NOT_TRACK="1",
        **extra,
    )


@dataclass
class Sample:
    seconds: float
    peak_mb: float
    out: str

    def json(self) -> Any:
        """The job's answer: the last line it printed."""
        return json.loads(self.out.strip().splitlines()[-1])


def median_s(samples: list[Sample]) -> float:
    return statistics.median(sample.seconds for sample in samples)


def peak_mb(samples: list[Sample]) -> float:
    return max(sample.peak_mb for sample in samples)


def measure(argv: list[str], *, environ: dict[str, str], cwd: Path | None = None, timeout: float) -> Sample:
    """Run a command; its wall time, peak memory and standard output. Killed (with its children) at `timeout`."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        child = subprocess.Popen(argv, env=environ, cwd=cwd, stdout=out, stderr=err, start_new_session=True)
        timer = threading.Timer(timeout, _kill_group, (child.pid,))
        timer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)  # not child.wait(): wait4 also gives the peak memory
        finally:
            timer.cancel()
        seconds = time.perf_counter() - began
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if child.returncode != 0:
        why = "timed out" if child.returncode == -signal.SIGKILL else f"exit code {child.returncode}"
        raise RuntimeError(f"{' '.join(argv[:4])} ...: {why}\n{stderr.strip()[-3000:]}")
    return Sample(seconds, usage.ru_maxrss / 1024, stdout)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended in the meantime
        os.killpg(pid, signal.SIGKILL)


def job(python_: Path | str, name: str, *args: Any, cwd: Path | None = None, timeout: float, **extra: str) -> Sample:
    """`python -m bench.peers_jobs NAME ARGS` in the given venv's Python."""
    return measure(
        [str(python_), "-m", "bench.peers_jobs", name, *map(str, args)],
        environ=env(**extra),
        cwd=cwd,
        timeout=timeout,
    )


def alternated(variants: dict[str, Callable[[], T]], rounds: int, warm: bool = True) -> dict[str, list[T]]:
    """Each variant's results over `rounds` rounds, alternated (A B A B ...) by bench.timing.alternate, its
    warm-up round left out; `warm=False` skips the warm-up (a quick run, or builds that take minutes)."""
    kept: dict[str, list[T]] = {name: [] for name in variants}

    def keep(name: str, run: Callable[[], T]) -> float:
        kept[name].append(run())
        return 0.0

    if not warm:
        for _ in range(rounds):
            for name, run in variants.items():
                keep(name, run)
        return kept
    alternate({name: partial(keep, name, run) for name, run in variants.items()}, rounds)
    return {name: values[1:] for name, values in kept.items()}


def new_store(peers: Path, target: Path) -> Path:
    """An empty MLflow store at target: a copy of one MLflow made once per benchmark run, as a user's store is
    made once (making and migrating one takes MLflow several seconds)."""
    shutil.copyfile(_empty_store(str(peers)), target)
    return target


@cache
def _empty_store(peers: str) -> Path:
    db = Path(tempfile.mkdtemp(prefix="kb-bench-mlflow-")) / "mlflow.db"
    atexit.register(shutil.rmtree, db.parent, True)
    job(peers, "mlflow-init", db, cwd=db.parent, timeout=300)
    return db
