"""Timing helpers: alternate the variants (A B A B ...) so machine noise hits them alike; report medians."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence


def user_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: Python may cache compiled modules (some CI images forbid it)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **extra}


def wall(command: Sequence[str], env: dict[str, str] | None = None) -> float:
    """Seconds one run of a command takes, start to exit, as a user would wait for it."""
    started = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def alternate(variants: dict[str, Callable[[], float]], repeats: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for measure in variants.values():
        measure()  # one warm-up each: file caches and .pyc files, as on a machine in use
    for _ in range(repeats):
        for name, measure in variants.items():
            samples[name].append(measure())
    return samples


def spread(values: list[float]) -> tuple[float, float, float]:
    """Median, 10th and 90th percentile."""
    if len(values) < 2:
        return values[0], values[0], values[0]
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return statistics.median(values), deciles[0], deciles[-1]


def machine() -> str:
    system = f"{platform.system()} {platform.release()}"
    return f"{platform.machine()}, {os.cpu_count()} CPUs, {system}, Python {platform.python_version()}"
