"""Seeded, realistic knowledge bases for benchmarks and tests: `python -m bench.generate ROOT --count N --seed S`.

The mix follows what a team evaluating PyTorch backends accumulates: mostly runs (a sixth of them failed,
interrupted or killed, with classes weighted per backend), some op-coverage sweeps, reported figures,
decisions, notes and release entries; package versions that move along the date range; bodies from one line
to several paragraphs with a profile table and a log tail. The same seed gives the same bytes.

Entries are made in blocks of BLOCK consecutive entries, each drawn from its own seeded stream, so blocks can be
written by several processes and the bytes do not depend on how many; links point back within a block.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shlex
import shutil
import sys
import time
from bisect import bisect_right
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from functools import lru_cache, partial
from itertools import accumulate, islice
from pathlib import Path
from typing import Any, Generic, TypeVar

from kb.model import frontmatter
from kb.model.entry import iso, new_entry
from kb.model.ids import slugify
from kb.store.knowledge_base import KnowledgeBase

T = TypeVar("T")
BLOCK = 1000  # entries per independently seeded block: the unit of parallel work
MAX_COUNT = 1 << 24  # id suffixes are a bijection on 24 bits
EPOCH = date(1970, 1, 1)
# Binary on Windows too: the bytes written are the bytes serialise() gives.
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)


class Weighted(Generic[T]):
    """Items with weights, drawn with one random number (random.choices rebuilds its table on every call)."""

    def __init__(self, weights: dict[T, float]):
        self.items = tuple(weights)
        self.cumulative = tuple(accumulate(weights.values()))

    def draw(self, rng: random.Random) -> T:
        return self.items[bisect_right(self.cumulative, rng.random() * self.cumulative[-1])]


def _tables(path: Path) -> dict[str, Any]:
    """The named tables of a JSON file, each list as a tuple (the tables are constants)."""

    def frozen(value: Any) -> Any:
        if isinstance(value, list):
            return tuple(frozen(item) for item in value)
        if isinstance(value, dict):
            return {key: frozen(item) for key, item in value.items()}
        return value

    return frozen(json.loads(path.read_text(encoding="utf-8")))


# ---------------------------------------------------------------------------------------------------------------
# What ran


@dataclass(frozen=True)
class Workload:
    name: str
    task: str  # training or inference
    model: str
    unit: str  # what throughput counts: tokens, samples or images
    gflops: float  # forward GFLOPs per token or sample, which with the hardware's peak sets plausible throughput
    params_b: float


def _w(name: str, task: str, model: str, unit: str, gflops: float, params_b: float) -> Workload:
    return Workload(name, "training" if task == "t" else "inference", model, unit, gflops, params_b)


WORKLOADS = (
    _w("llama3-8b-pretrain", "t", "Llama-3.1-8B", "tokens", 16, 8),
    _w("llama3-8b-infer", "i", "Llama-3.1-8B-Instruct", "tokens", 16, 8),
    _w("llama3-70b-finetune", "t", "Llama-3.3-70B-Instruct", "tokens", 140, 70),
    _w("llama3-70b-infer", "i", "Llama-3.3-70B-Instruct", "tokens", 140, 70),
    _w("llama3-405b-pretrain", "t", "Llama-3.1-405B", "tokens", 810, 405),
    _w("qwen3-8b-sft", "t", "Qwen3-8B", "tokens", 16, 8),
    _w("qwen3-32b-train", "t", "Qwen3-32B", "tokens", 64, 32),
    _w("qwen3-32b-infer", "i", "Qwen3-32B", "tokens", 64, 32),
    _w("qwen3-235b-a22b-infer", "i", "Qwen3-235B-A22B", "tokens", 44, 235),
    _w("qwen2.5-7b-lora", "t", "Qwen2.5-7B-Instruct", "tokens", 15, 7),
    _w("gpt-oss-20b-sft", "t", "gpt-oss-20b", "tokens", 7.2, 21),
    _w("gpt-oss-20b-infer", "i", "gpt-oss-20b", "tokens", 7.2, 21),
    _w("gpt-oss-120b-infer", "i", "gpt-oss-120b", "tokens", 10.2, 117),
    _w("mistral-7b-finetune", "t", "Mistral-7B-v0.3", "tokens", 14.5, 7.2),
    _w("mixtral-8x7b-train", "t", "Mixtral-8x7B-v0.1", "tokens", 26, 47),
    _w("mixtral-8x7b-infer", "i", "Mixtral-8x7B-Instruct-v0.1", "tokens", 26, 47),
    _w("deepseek-v3-lite", "i", "DeepSeek-V3-Lite", "tokens", 5.6, 16),
    _w("deepseek-v2-lite-sft", "t", "DeepSeek-V2-Lite", "tokens", 5.6, 16),
    _w("gemma3-12b-sft", "t", "gemma-3-12b-it", "tokens", 24, 12),
    _w("phi-4-finetune", "t", "phi-4", "tokens", 28, 14),
    _w("olmo2-7b-pretrain", "t", "OLMo-2-1124-7B", "tokens", 14, 7),
    _w("nanogpt-124m-train", "t", "GPT-2 124M", "tokens", 0.25, 0.124),
    _w("t5-xxl", "t", "t5-v1_1-xxl", "tokens", 22, 11),
    _w("bert-large-finetune", "t", "bert-large-uncased", "samples", 350, 0.34),
    _w("roberta-base-finetune", "t", "roberta-base", "samples", 64, 0.125),
    _w("resnet50-train", "t", "ResNet-50", "samples", 4.1, 0.026),
    _w("resnet50-infer", "i", "ResNet-50", "samples", 4.1, 0.026),
    _w("vit-h-14", "t", "ViT-H/14", "samples", 167, 0.63),
    _w("vit-b-16-infer", "i", "ViT-B/16", "samples", 17.6, 0.086),
    _w("convnext-large-train", "t", "ConvNeXt-L", "samples", 34, 0.2),
    _w("yolov8x-infer", "i", "YOLOv8x", "samples", 258, 0.068),
    _w("sam2-large-infer", "i", "SAM 2 Hiera-L", "samples", 810, 0.224),
    _w("clip-vit-l-14-infer", "i", "CLIP ViT-L/14", "samples", 81, 0.43),
    _w("whisper-large-v3", "i", "whisper-large-v3", "samples", 2100, 1.55),
    _w("wav2vec2-large-finetune", "t", "wav2vec2-large-960h", "samples", 95, 0.32),
    _w("flux-dev-infer", "i", "FLUX.1-dev", "images", 2_750_000, 12),
    _w("sdxl-base-infer", "i", "stable-diffusion-xl-base-1.0", "images", 340_000, 3.5),
    _w("sd3.5-large-infer", "i", "stable-diffusion-3.5-large", "images", 1_300_000, 8.1),
    _w("wan2.1-t2v-infer", "i", "Wan2.1-T2V-14B", "images", 9_800_000, 14),
    _w("dlrm-v2-train", "t", "DLRM-DCNv2", "samples", 0.6, 23),
)


@dataclass(frozen=True)
class Accelerator:
    vendor: str
    name: str
    short: str  # for titles: "8x H100"
    tag: str
    memory_gb: float
    tflops: float  # dense bf16 peak
    since: date  # first day it shows up in entries


def _a(vendor: str, name: str, short: str, memory_gb: float, tflops: float, since: str = "2000-01-01") -> Accelerator:
    return Accelerator(
        vendor, name, short, short.lower().replace(" ", "-"), memory_gb, tflops, date.fromisoformat(since)
    )


ACCELERATORS: dict[str, tuple[tuple[Accelerator, int], ...]] = {
    "cuda": (
        (_a("nvidia", "NVIDIA H100 80GB HBM3", "H100", 80, 989), 40),
        (_a("nvidia", "NVIDIA H200", "H200", 141, 989), 15),
        (_a("nvidia", "NVIDIA A100-SXM4-80GB", "A100", 80, 312), 15),
        (_a("nvidia", "NVIDIA B200", "B200", 180, 2250, "2025-05-15"), 15),
        (_a("nvidia", "NVIDIA GB200", "GB200", 186, 2500, "2025-10-01"), 8),
        (_a("nvidia", "NVIDIA L4", "L4", 24, 121), 4),
        (_a("nvidia", "NVIDIA L40S", "L40S", 48, 362), 3),
    ),
    "rocm": (
        (_a("amd", "AMD Instinct MI300X", "MI300X", 192, 1307), 50),
        (_a("amd", "AMD Instinct MI325X", "MI325X", 256, 1307, "2025-04-01"), 20),
        (_a("amd", "AMD Instinct MI355X", "MI355X", 288, 2500, "2025-09-15"), 20),
        (_a("amd", "AMD Instinct MI250X", "MI250X", 64, 383), 10),
    ),
    "neuron": (
        (_a("aws", "Trainium2", "Trn2", 96, 667), 55),
        (_a("aws", "Trainium", "Trn1", 32, 190), 15),
        (_a("aws", "Inferentia2", "Inf2", 32, 190), 10),
        (_a("aws", "Trainium3", "Trn3", 144, 1260, "2026-01-15"), 20),
    ),
    "tpu": (
        (_a("google", "TPU v5e", "v5e", 16, 197), 30),
        (_a("google", "TPU v5p", "v5p", 95, 459), 20),
        (_a("google", "TPU v6e", "v6e", 32, 918), 30),
        (_a("google", "TPU v4", "v4", 32, 275), 5),
        (_a("google", "TPU7x Ironwood", "v7", 192, 2307, "2025-12-01"), 15),
    ),
    "xla": (
        (_a("google", "TPU v5e", "v5e", 16, 197), 40),
        (_a("google", "TPU v6e", "v6e", 32, 918), 30),
        (_a("nvidia", "NVIDIA A100-SXM4-80GB", "A100", 80, 312), 15),
        (_a("nvidia", "NVIDIA H100 80GB HBM3", "H100", 80, 989), 15),
    ),
    "mps": (
        (_a("apple", "Apple M3 Max", "M3 Max", 128, 28), 35),
        (_a("apple", "Apple M4 Max", "M4 Max", 128, 34), 35),
        (_a("apple", "Apple M2 Ultra", "M2 Ultra", 192, 54), 15),
        (_a("apple", "Apple M4 Pro", "M4 Pro", 48, 17), 15),
    ),
    "cpu": (),
}
BACKEND = Weighted({"cuda": 38, "rocm": 12, "neuron": 20, "tpu": 12, "xla": 5, "mps": 5, "cpu": 8})
COVERAGE_BACKEND = Weighted({"cuda": 10, "rocm": 15, "neuron": 30, "tpu": 25, "xla": 10, "mps": 10})
REPORT_BACKEND = Weighted({"cuda": 30, "rocm": 25, "neuron": 25, "tpu": 20})
# The tables entries are drawn from (messages, sentences, log lines, kernel names, package builds...) are data:
# generate_vocabulary.json beside this module, read once.
VOCABULARY_PATH = Path(__file__).with_name("generate_vocabulary.json")
_VOCABULARY = _tables(VOCABULARY_PATH)
# How much of peak a run reaches, by backend (low, high).
EFFICIENCY = _VOCABULARY["EFFICIENCY"]
CPUS = _VOCABULARY["CPUS"]
# Per torch minor: CUDA builds, ROCm build, triton, torchvision.
CUDA_BUILDS = _VOCABULARY["CUDA_BUILDS"]
ROCM_BUILDS = _VOCABULARY["ROCM_BUILDS"]
HIP = _VOCABULARY["HIP"]
TRITON = _VOCABULARY["TRITON"]
TORCHVISION = _VOCABULARY["TORCHVISION"]
CUDNN = _VOCABULARY["CUDNN"]
NCCL = _VOCABULARY["NCCL"]
# Which message family a backend's failures read like; the messages by class and family (ROCm builds of torch keep
# the NCCL names for RCCL, so a ROCm timeout's watchdog line reads as CUDA's).
MESSAGE_FAMILY = _VOCABULARY["MESSAGE_FAMILY"]
MESSAGES: dict[str, dict[str, tuple[str, ...]]] = _VOCABULARY["MESSAGES"]
EXPLANATIONS = _VOCABULARY["EXPLANATIONS"]
OPS = _VOCABULARY["OPS"]
FUNCTIONS = _VOCABULARY["FUNCTIONS"]
PHASES = _VOCABULARY["PHASES"]
# What had to change, and the backends it makes sense on (empty: any).
ADAPTATIONS = _VOCABULARY["ADAPTATIONS"]
TAGS = _VOCABULARY["TAGS"]
AUTHORS = _VOCABULARY["AUTHORS"]
PUBLISHERS = _VOCABULARY["PUBLISHERS"]
PARALLELISM = _VOCABULARY["PARALLELISM"]
SENTENCES = _VOCABULARY["SENTENCES"]
# Only for language models.
LM_SENTENCES = _VOCABULARY["LM_SENTENCES"]
FAILURE_SENTENCES = _VOCABULARY["FAILURE_SENTENCES"]
STOP_SENTENCES = _VOCABULARY["STOP_SENTENCES"]
NOTE_SUBJECTS = _VOCABULARY["NOTE_SUBJECTS"]
NOTE_SENTENCES = _VOCABULARY["NOTE_SENTENCES"]
RELEASE_SENTENCES = _VOCABULARY["RELEASE_SENTENCES"]
LOG_START = _VOCABULARY["LOG_START"]
LOG_BACKEND = _VOCABULARY["LOG_BACKEND"]
LOG_COMPILED = _VOCABULARY["LOG_COMPILED"]
# The top of a profiler table, per backend family (tpu and xla share XLA's HLO names).
KERNELS = _VOCABULARY["KERNELS"]
TRACEBACK = _VOCABULARY["TRACEBACK"]
DEVICES = Weighted({1: 25, 2: 8, 4: 12, 8: 30, 16: 12, 32: 8, 64: 5})
DTYPE = Weighted({"bf16": 70, "fp16": 10, "fp32": 12, "fp8": 8})


# ---------------------------------------------------------------------------------------------------------------
# On what: versions as they were released over the date range


def _timeline(*items: tuple[str, T]) -> tuple[tuple[date, T], ...]:
    return tuple((date.fromisoformat(day), value) for day, value in items)


TORCH = _timeline(
    ("2024-10-29", "2.5.1"), ("2025-01-29", "2.6.0"), ("2025-04-23", "2.7.0"), ("2025-06-04", "2.7.1"),
    ("2025-08-06", "2.8.0"), ("2025-10-15", "2.9.0"), ("2025-11-12", "2.9.1"), ("2026-01-21", "2.10.0"),
    ("2026-03-04", "2.10.1"), ("2026-04-22", "2.11.0"), ("2026-07-15", "2.12.0"), ("2026-10-14", "2.13.0"),
)  # fmt: skip
NVIDIA_DRIVER = _timeline(
    ("2024-11-01", "550.127.05"), ("2025-03-01", "570.124.06"), ("2025-06-01", "575.57.08"),
    ("2025-09-01", "580.82.07"), ("2026-03-01", "590.48.01"), ("2026-09-01", "595.23.04"),
)  # fmt: skip
# torch-neuronx, the torch it pins, neuronx-cc. Up to 2.9 it sits on torch-xla; from 2.13.3.0 it is native
# (TorchNeuron), versioned apart from torch.
NEURONX = _timeline(
    ("2024-12-20", ("2.1.2.2.20.0", "2.1.2", "2.16.372.0")),
    ("2025-01-15", ("2.5.1.2.4.0", "2.5.1", "2.16.372.0")),
    ("2025-04-03", ("2.5.1.2.6.0", "2.5.1", "2.17.194.0")),
    ("2025-06-24", ("2.6.0.2.8.6734", "2.6.0", "2.19.8089.0")),
    ("2025-07-31", ("2.7.0.2.9.9357", "2.7.0", "2.20.9961.0")),
    ("2025-10-29", ("2.8.0.2.10.16998", "2.8.0", "2.21.18209.0")),
    ("2026-02-10", ("2.9.0.2.15.1", "2.9.0", "2.22.12471.0")),
    ("2026-06-02", ("2.13.3.0", "2.10.1", "2.23.6484.0")),
    ("2026-10-06", ("2.14.3.0", "2.11.0", "2.24.5133.0")),
)
NEURON_DRIVER = _timeline(("2024-12-01", "2.19.64.0"), ("2025-06-01", "2.22.2.0"), ("2026-02-01", "2.25.4.0"))
TORCH_XLA = _timeline(
    ("2024-12-05", "2.5.1"), ("2025-02-06", "2.6.0"), ("2025-04-25", "2.7.0"), ("2025-08-08", "2.8.0"),
    ("2025-10-17", "2.9.0"),
)  # fmt: skip
# TorchTPU replaces torch-xla for TPU entries from its first release.
TORCH_TPU = _timeline(("2026-04-28", "0.1.0"), ("2026-07-21", "0.2.0"), ("2026-10-20", "0.3.0"))
JAX = _timeline(
    ("2024-12-17", "0.4.38"), ("2025-01-17", "0.5.0"), ("2025-03-19", "0.5.3"), ("2025-04-16", "0.6.0"),
    ("2025-06-17", "0.6.2"), ("2025-07-22", "0.7.0"), ("2025-09-16", "0.7.2"), ("2025-10-15", "0.8.0"),
    ("2025-12-18", "0.8.2"), ("2026-03-03", "0.9.0"), ("2026-06-09", "0.9.2"), ("2026-09-15", "0.10.0"),
)  # fmt: skip
LIBTPU = _timeline(
    ("2024-12-01", "0.0.6"), ("2025-03-01", "0.0.11"), ("2025-06-01", "0.0.17"), ("2025-09-01", "0.0.21"),
    ("2026-01-01", "0.0.26"), ("2026-05-01", "0.0.31"), ("2026-09-01", "0.0.35"),
)  # fmt: skip
TRANSFORMERS = _timeline(
    ("2024-12-17", "4.47.1"), ("2025-01-10", "4.48.0"), ("2025-02-17", "4.49.0"), ("2025-03-21", "4.50.0"),
    ("2025-04-05", "4.51.3"), ("2025-05-21", "4.52.4"), ("2025-06-26", "4.53.2"), ("2025-08-06", "4.55.0"),
    ("2025-10-03", "4.57.1"), ("2025-12-01", "5.0.0"), ("2026-02-15", "5.1.0"), ("2026-05-01", "5.2.0"),
    ("2026-08-01", "5.3.0"), ("2026-10-15", "5.4.0"),
)  # fmt: skip
DIFFUSERS = _timeline(
    ("2024-12-23", "0.32.1"), ("2025-03-10", "0.33.1"), ("2025-06-24", "0.34.0"), ("2025-08-20", "0.35.1"),
    ("2026-01-20", "0.36.0"), ("2026-06-01", "0.37.0"),
)  # fmt: skip
PYTHON = Weighted({"3.10.16": 15, "3.11.11": 25, "3.11.13": 15, "3.12.8": 25, "3.12.11": 20})
LAG = Weighted({0: 75, 1: 20, 2: 5})  # releases behind the latest: a quarter of users lag

# ---------------------------------------------------------------------------------------------------------------
# How it went

KIND = Weighted({"run": 85, "coverage": 4, "report": 4, "decision": 2, "note": 3, "release": 2})
STATUS = Weighted({"completed": 75, "failed": 15, "interrupted": 5, "killed": 5})
KILLED = Weighted({"timeout": 60, "oom": 30, "crash": 10})  # what a scheduler's kill usually means
BODY_SIZE = Weighted({"line": 20, "short": 25, "medium": 35, "long": 20})
# Failure classes per backend: graph compilers (neuron, TPU) time out and miss lowerings far more than CUDA does.
FAILURE_CLASS: dict[str, Weighted[str]] = {
    "cuda": Weighted({
        "oom": 30, "compile_error": 12, "graph_break": 8, "recompile": 6, "numerical_mismatch": 8, "timeout": 8,
        "crash": 10, "environment": 10, "other": 8, "compile_timeout": 1, "unsupported_op": 1,
    }),
    "rocm": Weighted({
        "oom": 20, "compile_error": 15, "crash": 15, "environment": 15, "numerical_mismatch": 10,
        "unsupported_op": 5, "timeout": 8, "graph_break": 5, "other": 7,
    }),
    "neuron": Weighted({
        "compile_timeout": 22, "unsupported_op": 18, "compile_error": 15, "oom": 12, "cpu_fallback": 8,
        "recompile": 8, "crash": 7, "environment": 5, "timeout": 3, "numerical_mismatch": 2, "other": 2,
    }),
    "tpu": Weighted({
        "compile_timeout": 18, "unsupported_op": 15, "oom": 15, "recompile": 12, "cpu_fallback": 10,
        "compile_error": 12, "timeout": 6, "environment": 6, "numerical_mismatch": 3, "other": 3,
    }),
    "xla": Weighted({
        "compile_timeout": 14, "unsupported_op": 15, "oom": 12, "recompile": 15, "cpu_fallback": 12,
        "compile_error": 12, "timeout": 5, "environment": 10, "numerical_mismatch": 3, "other": 2,
    }),
    "mps": Weighted({
        "unsupported_op": 30, "cpu_fallback": 15, "oom": 15, "numerical_mismatch": 12, "crash": 8,
        "compile_error": 8, "graph_break": 5, "other": 7,
    }),
    "cpu": Weighted({
        "oom": 20, "timeout": 25, "compile_error": 12, "numerical_mismatch": 10, "graph_break": 8, "crash": 10,
        "other": 15,
    }),
}  # fmt: skip
RELEASES: tuple[tuple[str, tuple[tuple[date, Any], ...], str | None], ...] = (
    ("torch", TORCH, None), ("torch-neuronx", NEURONX, "neuron"), ("torch-xla", TORCH_XLA, "xla"), ("jax", JAX, "tpu"),
    ("transformers", TRANSFORMERS, None), ("torch_tpu", TORCH_TPU, "tpu"),
)  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------
# Bodies: sentence templates filled from the entry


LEADS = (SENTENCES[0], SENTENCES[3], SENTENCES[12])


@dataclass
class _Context:
    """Facts about one entry, drawn once, shared by its front matter, title and body."""

    index: int
    when: datetime
    rng: random.Random
    values: dict[str, Any]


def _released(timeline: Sequence[tuple[date, T]], day: date, rng: random.Random) -> T:
    """The release current on `day`; a quarter of users lag one or two releases behind."""
    latest = max(bisect_right(timeline, day, key=lambda item: item[0]) - 1, 0)
    return timeline[max(latest - LAG.draw(rng), 0)][1]


def _suffix(index: int, key: int) -> str:
    """An id's six hex digits: a keyed bijection of the index on 24 bits, so random-looking and never clashing."""
    x = (index ^ key) & 0xFFFFFF
    x = (x * 0x9E3779B1) & 0xFFFFFF
    x ^= x >> 12
    x = (x * 0x85EBCA6B) & 0xFFFFFF
    return f"{x ^ (x >> 11):06x}"


@lru_cache(maxsize=1024)
def _day(days: int) -> str:
    return (EPOCH + timedelta(days=days)).isoformat()


def _log_time(epoch_s: float) -> str:
    """The logging module's '2026-03-14 10:22:31,884' by arithmetic: datetime per log line was a tenth of the time."""
    days, second = divmod(epoch_s, 86400)
    hour, second = divmod(second, 3600)
    minute, second = divmod(second, 60)
    return f"{_day(int(days))} {int(hour):02d}:{int(minute):02d}:{int(second):02d},{int(second % 1 * 1000):03d}"


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _sig(value: float, digits: int = 3) -> float:
    """Round to significant digits, as a measured figure would be printed."""
    return float(f"{value:.{digits}g}")


class _Generator:
    """One block of consecutive entries, drawn from its own seeded stream so blocks can be written in parallel."""

    def __init__(self, seed: int, count: int, start: date, days: int, block: int):
        self.rng = random.Random(f"{seed}:{block}")
        self.key = random.Random(seed).getrandbits(24)
        self.indexes = range(block * BLOCK, min(count, (block + 1) * BLOCK))
        self.count = count
        self.start = datetime(start.year, start.month, start.day, tzinfo=timezone.utc)
        self.span_s = days * 86400
        # Links point back within the block: earlier blocks are being written at the same time.
        self.all_ids: list[str] = []
        self.runs_by_workload: dict[str, deque[str]] = {}
        self.last_failed: dict[tuple[str, str], str] = {}

    def entries(self) -> Iterator[tuple[str, str]]:
        """(path relative to entries/, text) for each entry of the block, oldest first."""
        for index in self.indexes:
            # Recorded times rise with the index, so versions evolve along the file list and links point back.
            offset = (index + self.rng.random()) * self.span_s / self.count
            ctx = _Context(index, self.start + timedelta(seconds=int(offset)), self.rng, {})
            data, body = getattr(self, f"_{KIND.draw(self.rng)}")(ctx)
            self.all_ids.append(data["id"])
            folder = f"{ctx.when.year}/" if self.rng.random() < 0.1 else ""  # 1 in 10 in year folders
            yield f"{folder}{data['id']}.md", self._text(data, body)

    # -- shared pieces ------------------------------------------------------------------------------------------

    def _id(self, title: str, ctx: _Context) -> str:
        return f"{ctx.when.date().isoformat()}-{slugify(title)}-{_suffix(ctx.index, self.key)}"

    def _earlier(self, workload: str | None = None) -> str | None:
        recent = self.runs_by_workload.get(workload or "")
        if recent:
            return self.rng.choice(recent)
        return self.rng.choice(self.all_ids) if self.all_ids else None

    def _tags(self, *fixed: str, extra: int = 2) -> list[str]:
        tags = list(fixed)
        for _ in range(self.rng.randrange(extra + 1)):
            tag = self.rng.choice(TAGS)
            if tag not in tags:
                tags.append(tag)
        return tags

    def _setup(self, ctx: _Context, backend: str | None = None) -> None:
        """Backend, hardware, workload, mode and versions: what every run-like entry is about."""
        rng, day = ctx.rng, ctx.when.date()
        v = ctx.values
        v["backend"] = backend = backend or BACKEND.draw(rng)
        v["workload"] = workload = rng.choice(WORKLOADS)
        pool = [(accel, weight) for accel, weight in ACCELERATORS[backend] if accel.since <= day]
        accel = rng.choices([a for a, _ in pool], [w for _, w in pool])[0] if pool else None
        n = 1 if backend in ("mps", "cpu") else DEVICES.draw(rng)
        graph_compiler = backend in ("neuron", "tpu", "xla")
        mode = "compiled" if rng.random() < (0.85 if graph_compiler else 0.45) else "eager"
        v.update(accel=accel, n=n, mode=mode, dtype=DTYPE.draw(rng))
        v["versions"] = self._versions(ctx, backend, workload, accel)
        v["torch"] = v["versions"]["torch"]

    def _versions(self, ctx: _Context, backend: str, workload: Workload, accel: Accelerator | None) -> dict[str, str]:
        rng, day = ctx.rng, ctx.when.date()
        versions = {"python": PYTHON.draw(rng)}
        torch = _released(TORCH, day, rng)
        minor = _minor(torch)
        if backend == "cuda":
            cuda = rng.choice(CUDA_BUILDS[minor])
            nightly = rng.random() < 0.08
            local = f"+cu{cuda.replace('.', '')}"
            versions["torch"] = f"{_next_minor(torch)}.dev{day:%Y%m%d}{local}" if nightly else torch + local
            versions |= {"cuda": cuda, "cudnn": CUDNN[cuda], "nccl": NCCL[cuda], "triton": TRITON[minor]}
        elif backend == "rocm":
            rocm = ROCM_BUILDS[minor]
            versions |= {"torch": f"{torch}+rocm{rocm}", "rocm": rocm, "hip": HIP[rocm], "triton": TRITON[minor]}
        elif backend == "neuron":
            neuronx, pinned, cc = _released(NEURONX, day, rng)
            versions |= {"torch": pinned, "torch-neuronx": neuronx, "neuronx-cc": cc}
            if not neuronx.startswith(("2.13.", "2.14.")):
                versions["torch-xla"] = pinned  # the XLA-based releases ride on torch-xla
        elif backend == "tpu" and day >= TORCH_TPU[0][0]:
            versions |= {
                "torch": torch,
                "torch_tpu": _released(TORCH_TPU, day, rng),
                "libtpu": _released(LIBTPU, day, rng),
            }
        elif backend in ("tpu", "xla"):
            xla = _released(TORCH_XLA, day, rng)
            versions |= {"torch": xla, "torch-xla": xla}
            if accel and accel.vendor == "google":
                versions["libtpu"] = _released(LIBTPU, day, rng)
        elif backend == "cpu":
            versions["torch"] = f"{torch}+cpu"
        else:
            versions["torch"] = torch
        if backend == "tpu" and rng.random() < 0.5:
            jax = _released(JAX, day, rng)
            versions |= {"jax": jax, "jaxlib": jax}
        if workload.unit == "tokens" or workload.name.startswith(("whisper", "wav2vec", "bert", "roberta")):
            versions["transformers"] = _released(TRANSFORMERS, day, rng)
        elif workload.unit == "images":
            versions["diffusers"] = _released(DIFFUSERS, day, rng)
        else:
            versions["torchvision"] = TORCHVISION.get(_minor(versions["torch"]), "0.28.0")
        return versions

    def _hardware(self, ctx: _Context) -> dict[str, Any]:
        rng, v = ctx.rng, ctx.values
        backend, accel, n = v["backend"], v["accel"], v["n"]
        # Hosts come from small fleets: the same machine shows up again, as in a real team's evidence.
        number = rng.randrange(1, 25)
        if backend == "mps":
            return {
                "hostname": f"mbp-{AUTHORS[number % len(AUTHORS)].split('.')[0]}.local",
                "os": "macOS 15.5 arm64",
                "cpu": accel.name,
                "cpu_cores": 16,
                "memory_gb": accel.memory_gb,
                "accelerators": [{"vendor": "apple", "name": accel.name, "count": 1, "memory_gb": accel.memory_gb}],
                "probes": {"system_profiler": "ok"},
            }
        cpu, cores = CPUS[number % len(CPUS)]
        hardware: dict[str, Any] = {"hostname": "", "os": "Linux 6.8.0-1024-aws x86_64", "cpu": cpu}
        hardware |= {"cpu_cores": cores * 2, "cpu_threads": cores * 4, "memory_gb": 2048 if accel else 512}
        if accel is None:
            hardware["hostname"] = f"cpu-bench-{number:02d}"
            return hardware
        per_node = min(n, 16 if backend == "neuron" else 8)
        if backend == "neuron":
            hardware["hostname"] = f"ip-10-0-{number * 7 % 256}-{number * 13 % 256}"
            driver = _released(NEURON_DRIVER, ctx.when.date(), rng)
            probes = {"neuron-ls": "ok", "nvidia-smi": "absent"}
        elif accel.vendor == "google":
            hardware |= {"hostname": f"t1v-n-{number * 4099 % 65536:04x}-w-0", "os": "Linux 6.8.0-1015-gcp x86_64"}
            driver = None
            probes = {"tpu-info": "ok", "nvidia-smi": "absent"}
        elif accel.vendor == "amd":
            hardware["hostname"] = f"{accel.tag}-node-{number:03d}"
            driver = "6.12.12"
            probes = {"rocm-smi": "ok", "amd-smi": "ok", "nvidia-smi": "absent"}
        else:
            hardware["hostname"] = f"{accel.tag}-node-{number:03d}"
            driver = _released(NVIDIA_DRIVER, ctx.when.date(), rng)
            probes = {"nvidia-smi": "ok"}
        device = {"vendor": accel.vendor, "name": accel.name, "count": per_node, "memory_gb": accel.memory_gb}
        if driver:
            device["driver"] = driver
        hardware |= {"accelerators": [device], "probes": probes}
        if n > per_node:
            hardware["nodes"] = n // per_node
        return hardware

    def _environment(self, ctx: _Context) -> dict[str, str]:
        rng, v = ctx.rng, ctx.values
        backend, n = v["backend"], v["n"]
        env: dict[str, str] = {}
        if backend == "cuda":
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(min(n, 8)))
            if rng.random() < 0.5:
                env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
        elif backend == "rocm":
            env["HIP_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(min(n, 8)))
        elif backend == "neuron":
            env["NEURON_CC_FLAGS"] = rng.choice(("--model-type=transformer -O1", "--model-type=transformer", "-O2"))
            env["NEURON_RT_NUM_CORES"] = str(min(n, 16) * 8)
        elif backend in ("tpu", "xla"):
            env["PJRT_DEVICE"] = "TPU" if v["accel"].vendor == "google" else "CUDA"
            if rng.random() < 0.3:
                env["XLA_FLAGS"] = "--xla_dump_to=/tmp/xla_dump"
        elif backend == "mps":
            env["PYTORCH_ENABLE_MPS_FALLBACK"] = rng.choice(("0", "1"))
        else:
            env["OMP_NUM_THREADS"] = rng.choice(("16", "32", "64"))
        if n > 1 and backend in ("cuda", "rocm"):
            env["NCCL_DEBUG"] = "WARN"
        if v["mode"] == "compiled" and backend in ("cuda", "rocm", "cpu"):
            env["TORCHINDUCTOR_CACHE_DIR"] = "/scratch/inductor-cache"
        if rng.random() < 0.2:
            env["HF_TOKEN"] = "[REDACTED]"
        return env

    def _settings(self, ctx: _Context) -> dict[str, Any]:
        rng, v = ctx.rng, ctx.values
        workload: Workload = v["workload"]
        training = workload.task == "training"
        settings: dict[str, Any] = {}
        if workload.unit == "tokens":
            batch = rng.choice((1, 2, 4, 8, 16, 32) if training else (1, 4, 8, 16, 32, 64))
            seq = rng.choice((512, 1024, 2048, 4096, 8192, 32768))
            settings |= {"batch": batch, "seq_len": seq}
        elif workload.unit == "images":
            batch, seq = rng.choice((1, 2, 4, 8)), 0
            settings |= {"batch": batch, "resolution": rng.choice((512, 768, 1024)), "denoise_steps": 28}
        else:
            batch, seq = rng.choice((16, 32, 64, 128, 256, 512)), 0
            settings["batch"] = batch
        steps = rng.choice((20, 50, 100, 200, 500, 1000))
        settings |= {"dtype": v["dtype"], "steps": steps, "seed": rng.choice((0, 42, 1234))}
        if training:
            accum = rng.choice((1, 1, 2, 4, 8))
            settings |= {"grad_accum": accum, "lr": rng.choice((1e-5, 3e-5, 1e-4, 3e-4, 6e-4))}
            v["accum"] = accum
        if v["n"] > 1:
            settings["parallelism"] = rng.choice(PARALLELISM)
        settings["devices"] = v["n"]
        if v["mode"] == "compiled":
            settings["compile_cache"] = "cold" if rng.random() < 0.35 else "cached"
            if v["backend"] in ("cuda", "rocm"):
                settings["compile_mode"] = rng.choice(("default", "max-autotune", "reduce-overhead"))
        shape = f"sequence length {seq}" if seq else f"{settings.get('resolution', 224)} px inputs"
        v.update(
            batch=batch, seq=seq, shape=shape, steps=steps, parallelism=settings.get("parallelism", "no parallelism")
        )
        return settings

    def _failure(self, ctx: _Context, status: str) -> dict[str, Any] | None:
        """The failure section; also sets how many steps ran (`done`): none when it failed before the first."""
        rng, v = ctx.rng, ctx.values
        backend, steps = v["backend"], v["steps"]
        v["done"] = steps if status == "completed" else rng.randrange(1, steps)
        if status == "completed":
            return None
        if status == "interrupted":
            return {"class": "interrupted", "message": "KeyboardInterrupt", "step": v["done"], "assigned": "auto"}
        cls = KILLED.draw(rng) if status == "killed" else FAILURE_CLASS[backend].draw(rng)
        phase = PHASES.get(cls, "steady")
        if phase != "steady":
            v["done"] = 0
        family = MESSAGE_FAMILY.get(backend, "cpu")
        options = MESSAGES[cls]
        templates = options.get(family) or options.get("*") or options["cuda"]
        memory = v["accel"].memory_gb if v["accel"] else 512
        fill = {
            "gib": f"{rng.choice((0.5, 1, 2, 4, 8, 16, 20)):.2f}", "cap": f"{memory * 0.99:.2f}",
            "free_mib": rng.randrange(20, 900), "used": f"{memory * 0.97:.2f}", "free_gib": f"{rng.random() * 3:.2f}",
            "nbytes": rng.randrange(1 << 28, 1 << 35), "rank": rng.randrange(v["n"]),
            "limit": rng.choice((1800, 3600, 7200)), "graph": rng.randrange(1000, 99999), "op": rng.choice(OPS),
            "op2": rng.choice(OPS), "fn": rng.choice(FUNCTIONS),
            "dispatch": "XLA" if "torch-xla" in v["versions"] else "PrivateUse1", "count": rng.randrange(9, 5000),
            "steps": steps, "step": v["done"], "line": rng.randrange(40, 900), "seq": v["seq"] or v["batch"],
            "seq2": rng.choice((777, 1536, 3001)), "diff": rng.choice((0.0625, 0.125, 0.03125)),
            "loss": f"{rng.uniform(2, 3):.4f}", "loss2": f"{rng.uniform(3, 9):.4f}", "batch": v["batch"],
            "accel": v["accel"].short if v["accel"] else "the host", "devices": v["n"],
        }  # fmt: skip
        fill["op_short"] = fill["op"].split("::")[1].split(".")[0].strip("_")
        message = rng.choice(templates).format_map(fill)
        line = rng.randrange(80, 4000)
        failure: dict[str, Any] = {"class": cls, "message": message, "phase": phase}
        if phase == "steady":
            failure["step"] = v["done"]
        if v["n"] > 1:
            failure["rank"] = fill["rank"]
        if rng.random() < 0.4:
            failure["explanation"] = rng.choice(EXPLANATIONS[cls]).format_map(fill)
        manual = "explanation" in failure and rng.random() < 0.5
        failure |= {
            "evidence": f"output.log:{line}: {message.splitlines()[0]}",
            "assigned": "manual" if manual else "auto",
        }
        v.update(first_line=message.splitlines()[0], phase=phase, op=fill["op"])
        return failure

    def _figures(self, ctx: _Context) -> tuple[dict[str, Any], dict[str, Any]]:
        """Timings and metrics from a throughput model: devices x peak x efficiency / work per item."""
        rng, v = ctx.rng, ctx.values
        workload: Workload = v["workload"]
        backend, accel, n = v["backend"], v["accel"], v["n"]
        tflops = accel.tflops if accel else 2.5
        low, high = EFFICIENCY[backend]
        efficiency = rng.uniform(low, high)
        if v["mode"] == "compiled":
            efficiency *= rng.uniform(1.05, 1.4) if backend in ("cuda", "rocm", "cpu", "mps") else 1.0
        elif backend in ("neuron", "tpu", "xla"):
            efficiency *= rng.uniform(0.2, 0.6)  # eager on a graph compiler pays per-op dispatch
        training = workload.task == "training"
        flops_per_item = workload.gflops * 1e9 * (3 if training else 1)
        rate = n * tflops * 1e12 * efficiency / flops_per_item
        items_per_step = v["batch"] * n * (v["seq"] if workload.unit == "tokens" else 1)
        step = items_per_step / rate
        done = v["done"]
        warmup = min(3 if backend in ("cuda", "rocm", "mps", "cpu") else 5, done)
        load = _sig(rng.uniform(2, 12) + workload.params_b * rng.uniform(0.3, 1.5))
        compile_s = None
        if v["mode"] == "compiled" and v.get("phase") != "load":
            scale = {"neuron": (300, 3000), "tpu": (60, 900), "xla": (60, 900)}.get(backend, (40, 400))
            compile_s = _sig(rng.uniform(*scale) * (1 if v.get("cache") == "cold" else rng.uniform(0.03, 0.12)))
        first = _sig(step * rng.uniform(2, 6) + (compile_s or 0) * 0.8)
        wall = load + (compile_s or 0) + first + step * max(done - 1, 0) * rng.uniform(1.0, 1.1)
        wall = round(wall + rng.uniform(1, 15), 1)
        ended = ctx.when - timedelta(seconds=rng.randrange(1, 30))
        timings: dict[str, Any] = {"started": iso(ended - timedelta(seconds=wall)), "ended": iso(ended), "wall_s": wall}
        timings["load_s"] = load
        if compile_s is not None:
            timings["compile_s"] = compile_s
        if done:
            timings["first_step_s"] = first
        if done > warmup:
            timings["warmup_s"] = _sig(first + step * (warmup - 1) * 1.3)
            median = _sig(step)
            spread = rng.uniform(0.02, 0.15)
            timings["step_s"] = {
                "median": median, "p10": _sig(step * (1 - spread / 3)), "p90": _sig(step * (1 + spread)),
                "count": done - warmup,
            }  # fmt: skip
        metrics: dict[str, Any] = {}
        if done > warmup:
            name = "tokens_per_s" if workload.unit == "tokens" else "samples_per_s"
            unit = "images/s" if workload.unit == "images" else f"{workload.unit}/s"
            metrics[name] = {
                "value": _sig(items_per_step / step, 5),
                "unit": unit,
                "better": "higher",
                "phase": "steady",
            }
            v["metric_text"] = f"{metrics[name]['value']:,} {unit}"
            v["tps"] = metrics[name]["value"]
        if training and done:
            loss = _sig(rng.uniform(1.4, 3.6), 4)
            if v.get("nan"):
                loss = float("nan")
            metrics["loss"] = {"value": loss, "better": "lower", "step": done}
        elif done > warmup and workload.unit == "tokens":
            metrics["latency_ms_p50"] = {
                "value": _sig(step * 1000 / max(v["seq"] // 8, 1)),
                "unit": "ms",
                "better": "lower",
            }
        memory = accel.memory_gb if accel else 512
        peak = memory * (rng.uniform(0.9, 0.99) if v.get("oom") else rng.uniform(0.25, 0.9))
        metrics["peak_memory_gb"] = {"value": _sig(peak), "unit": "GB", "better": "lower"}
        v.update(
            warmup=warmup, first_step=first, compile=compile_s or 0, peak=_sig(peak), memory=memory, wall=wall,
            step_time=step, load=load, mfu=round(efficiency * 100), tps=v.get("tps", 0),
            global_batch=v["batch"] * n * v.get("accum", 1), metric_text=v.get("metric_text", "not reached"),
        )  # fmt: skip
        return timings, metrics

    # -- kinds --------------------------------------------------------------------------------------------------

    def _run(self, ctx: _Context) -> tuple[dict[str, Any], str]:
        rng, v = ctx.rng, ctx.values
        self._setup(ctx)
        backend, workload, accel, n, mode = v["backend"], v["workload"], v["accel"], v["n"], v["mode"]
        status = STATUS.draw(rng)
        settings = self._settings(ctx)
        v["cache"] = settings.get("compile_cache")
        failure = self._failure(ctx, status)
        v["oom"] = bool(failure) and failure["class"] == "oom"
        v["nan"] = bool(failure) and "nan at step" in failure["message"]
        timings, metrics = self._figures(ctx)
        where = f"{n}x {accel.short}" if accel else "CPU"
        title = rng.choice(
            (
                f"{workload.name} on {where}, {mode}",
                f"{workload.name} {backend} {mode}",
                f"{workload.model} {workload.task} on {where} ({mode}, {v['dtype']})",
                f"{workload.name} {backend} {mode} torch {v['torch'].split('+')[0]}",
            )
        )
        entry_id = self._id(title, ctx)
        links: dict[str, Any] = {}
        key = (workload.name, backend)
        if key in self.last_failed and rng.random() < 0.3:
            links["rerun_of"] = self.last_failed.pop(key)
        elif rng.random() < 0.03 and (earlier := self._earlier(workload.name)):
            links["reference"] = earlier
        if status == "failed":
            self.last_failed[key] = entry_id
        self.runs_by_workload.setdefault(workload.name, deque(maxlen=20)).append(entry_id)
        tags = [accel.tag] if accel else []
        if ".dev" in v["torch"]:
            tags.append("nightly")
        if failure and rng.random() < 0.2:
            tags.append("regression")
        author = "nightly-bot" if "nightly" in tags else rng.choice(AUTHORS)
        user = author.split(".")[0].replace("-", "")
        script = "train.py" if workload.task == "training" else "infer.py"
        argv = ["torchrun", f"--nproc-per-node={min(n, 8)}"] if n > 1 else ["python"]
        argv += [script, "--model", workload.model, "--backend", backend, "--batch", str(v["batch"])]
        if mode == "compiled":
            argv.append("--compile")
        exit_code, signal = {"completed": (0, None), "failed": (1, None), "interrupted": (130, "SIGINT")}.get(
            status, (None, rng.choice(("SIGKILL", "SIGTERM")))
        )
        command = {"argv": argv, "line": shlex.join(argv), "cwd": f"/home/{user}/project/bench", "exit_code": exit_code}
        command |= {"signal": signal, "python": f"/home/{user}/project/bench/.venv/bin/python"}
        measured = rng.random() < 0.9
        provenance = (
            {"source": "measured", "tool": "kb record", "environment": "run_time"}
            if measured
            else {"source": "imported", "tool": "kb record --from", "environment": "record_time"}
        )
        v.update(user=user, pid=rng.randrange(1000, 400000), model=workload.model, task=workload.task, script=script)
        v["signal"] = signal
        hardware = self._hardware(ctx)
        v["host"], v["threads"] = hardware["hostname"], hardware.get("cpu_threads", 16)
        adaptations = None
        if (failure or backend in ("neuron", "tpu", "xla", "mps")) and rng.random() < 0.25:
            fitting = [a for a in ADAPTATIONS if not a[3] or backend in a[3]]
            picked = rng.sample(fitting, rng.randint(1, 3))
            adaptations = [{"what": what, "kind": kind, "effort": effort} for what, kind, effort, _ in picked]
        data = {
            "schema": 1, "id": entry_id, "title": title, "kind": "run", "status": status, "recorded": iso(ctx.when),
            "author": author, "tags": self._tags(*tags), "links": links or None, "provenance": provenance,
            "workload": {"name": workload.name, "task": workload.task, "model": workload.model}, "backend": backend,
            "mode": mode, "settings": settings, "command": command,
            "git": {"commit": f"{rng.getrandbits(160):040x}", "branch": rng.choice(("main", "main", "perf/attn")),
                    "dirty": rng.random() < 0.2},
            "versions": v["versions"], "hardware": hardware, "environment": self._environment(ctx),
            "timings": timings, "metrics": metrics, "failure": failure, "adaptations": adaptations,
        }  # fmt: skip
        if mode == "compiled" and backend in ("cuda", "rocm", "cpu") and rng.random() < 0.4:
            breaks = rng.choice((0, 0, 0, 1, 2, 5))
            data["compile"] = {
                "graphs": breaks + 1,
                "graph_breaks": {"count": breaks},
                "cache": "hit" if rng.random() < 0.6 else "miss",
            }
        v["graphs"] = data.get("compile", {}).get("graphs", 1)
        return data, self._run_body(ctx, status, failure, adaptations)

    def _coverage(self, ctx: _Context) -> tuple[dict[str, Any], str]:
        rng, v = ctx.rng, ctx.values
        self._setup(ctx, backend=COVERAGE_BACKEND.draw(rng))
        backend = v["backend"]
        total = rng.randrange(2400, 2800)
        passed = int(total * rng.uniform(0.55 if backend in ("neuron", "mps") else 0.8, 0.99))
        title = f"Op coverage: {backend} with torch {v['torch'].split('+')[0]} ({v['dtype']})"
        missing = rng.sample(OPS, 6)
        rows = "\n".join(
            f"| `{op}` | {rng.choice(('missing lowering', 'CPU fallback', 'wrong result'))} |" for op in missing
        )
        body = (
            f"OpInfo sweep over {total} operator variants on {backend}, {v['dtype']}.\n\n"
            f"{passed} passed, {total - passed} failed or fell back. The ones that matter for our workloads:\n\n"
            f"| op | result |\n|---|---|\n{rows}\n"
        )
        data = {
            "schema": 1, "id": self._id(title, ctx), "title": title, "kind": "coverage", "recorded": iso(ctx.when),
            "author": rng.choice(AUTHORS), "tags": self._tags("coverage"),
            "provenance": {"source": "measured", "tool": "kb record", "environment": "run_time"}, "backend": backend,
            "settings": {"suite": "opinfo", "dtype": v["dtype"]}, "versions": v["versions"],
            "metrics": {
                "ops_passed": {"value": passed, "unit": "ops", "better": "higher"},
                "ops_failed": {"value": total - passed, "unit": "ops", "better": "lower"},
                "coverage_pct": {"value": round(100 * passed / total, 1), "unit": "%", "better": "higher"},
            },
        }  # fmt: skip
        return data, body

    def _report(self, ctx: _Context) -> tuple[dict[str, Any], str]:
        rng, v = ctx.rng, ctx.values
        self._setup(ctx, backend=REPORT_BACKEND.draw(rng))
        v.update(steps=100, done=100, seq=4096, batch=8)
        _, metrics = self._figures(ctx)
        workload, accel, publisher = v["workload"], v["accel"], rng.choice(PUBLISHERS)
        title = f"{publisher}: {workload.model} {workload.task} on {v['n']}x {accel.short}"
        reported_on = ctx.when.date() - timedelta(days=rng.randrange(1, 60))
        name = "tokens_per_s" if "tokens_per_s" in metrics else "samples_per_s"
        data = {
            "schema": 1, "id": self._id(title, ctx), "title": title, "kind": "report", "recorded": iso(ctx.when),
            "author": rng.choice(AUTHORS), "tags": self._tags("reported", accel.tag),
            "links": {"reference": r} if rng.random() < 0.2 and (r := self._earlier(workload.name)) else None,
            "provenance": {
                "source": "reported", "publisher": publisher,
                "url": f"https://example.invalid/{slugify(publisher)}/{reported_on:%Y/%m}/{slugify(title, 60)}",
                "date": reported_on.isoformat(), "reported_by": rng.choice(AUTHORS),
            },
            "workload": {"name": workload.name, "task": workload.task, "model": workload.model},
            "backend": v["backend"], "mode": v["mode"], "settings": {"devices": v["n"], "dtype": v["dtype"]},
            "versions": {k: val for k, val in v["versions"].items() if k != "python"},
            "metrics": {name: metrics[name]},
        }  # fmt: skip
        body = (
            f"Reported figure: {v['metric_text']} for {workload.model} on {v['n']}x {accel.short} "
            f"({v['mode']}, {v['dtype']}), as published by {publisher}. We have not reproduced it; "
            f"their batch and sequence length are not stated."
        )
        return data, body

    def _decision(self, ctx: _Context) -> tuple[dict[str, Any], str]:
        rng, v = ctx.rng, ctx.values
        self._setup(ctx)
        workload, backend, accel = v["workload"], v["backend"], v["accel"]
        verb = rng.choice(("Run", "Keep", "Do not move", "Move"))
        title = f"Decision: {verb} {workload.name} on {backend} ({v['mode']})"
        evidence = sorted({e for e in (self._earlier(workload.name) for _ in range(rng.randint(2, 4))) if e})
        where = accel.name if accel else "CPU"
        body = (
            f"## Context\n\n{workload.model} {workload.task} has to run somewhere cheaper by next quarter. "
            f"The candidates were measured on {where} with torch {v['torch']}.\n\n## Decision\n\n"
            f"{verb} {workload.name} on {backend}, {v['mode']} mode. The evidence entries are linked.\n\n"
            f"## Consequences\n\nRelease checks on {backend} become part of the nightly job; "
            f"a regression over 5 % blocks the upgrade.\n"
        )
        data = {
            "schema": 1, "id": self._id(title, ctx), "title": title, "kind": "decision", "recorded": iso(ctx.when),
            "author": rng.choice(AUTHORS[:10]), "tags": self._tags("decision"),
            "links": {"evidence": evidence} if evidence else None,
            "workload": {"name": workload.name, "task": workload.task, "model": workload.model}, "backend": backend,
            "mode": v["mode"],
        }  # fmt: skip
        return data, body

    def _note(self, ctx: _Context) -> tuple[dict[str, Any], str]:
        rng, v = ctx.rng, ctx.values
        self._setup(ctx)
        fill = {
            "backend": v["backend"], "metric": rng.choice(("tokens/s", "step time", "compile time")),
            "op": rng.choice(OPS), "accel": v["accel"].short if v["accel"] else "CPU", "model": v["workload"].model,
            "publisher": rng.choice(PUBLISHERS),
        }  # fmt: skip
        title = rng.choice(NOTE_SUBJECTS).format_map(fill)
        body = " ".join(rng.sample(NOTE_SENTENCES, rng.randint(1, 5))) + "\n"
        data = {
            "schema": 1, "id": self._id(title, ctx), "title": title, "kind": "note", "recorded": iso(ctx.when),
            "author": rng.choice(AUTHORS[:10]), "tags": self._tags(extra=3),
            "links": {"reference": r} if rng.random() < 0.5 and (r := self._earlier()) else None,
            "backend": v["backend"],
        }  # fmt: skip
        return data, body

    def _release(self, ctx: _Context) -> tuple[dict[str, Any], str]:
        rng, day = ctx.rng, ctx.when.date()
        packages = [(name, line, backend) for name, line, backend in RELEASES if line[0][0] <= day]
        if not packages:  # a start date before the first release
            return self._note(ctx)
        package, timeline, backend = rng.choice(packages)
        released = timeline[bisect_right(timeline, day, key=lambda item: item[0]) - 1][1]
        version = released[0] if isinstance(released, tuple) else released
        title = rng.choice(
            (
                f"{package} {version} released",
                f"Upgrade notes: {package} {version}",
                f"{package} {version}: what changed",
            )
        )
        body = "\n".join("- " + s.format(op=rng.choice(OPS)) for s in rng.sample(RELEASE_SENTENCES, rng.randint(2, 5)))
        data = {
            "schema": 1, "id": self._id(title, ctx), "title": title, "kind": "release", "recorded": iso(ctx.when),
            "author": rng.choice(AUTHORS[:10]), "tags": ["release", *([backend] if backend else [])],
            "backend": backend, "versions": {package: version},
        }  # fmt: skip
        return data, body + "\n"

    # -- bodies -------------------------------------------------------------------------------------------------

    def _run_body(
        self, ctx: _Context, status: str, failure: dict[str, Any] | None, adaptations: list[dict[str, Any]] | None
    ) -> str:
        rng, v = ctx.rng, ctx.values
        accel = v["accel"]
        fill = v | {
            "accel": accel.short if accel else "CPU", "ratio": rng.choice(("90 %", "75 %", "60 %", "110 %")),
            "delta": rng.choice(("+3", "-4", "+12", "-1", "+0.5")), "accum": v.get("accum", 1),
        }  # fmt: skip
        size = BODY_SIZE.draw(rng)
        lead = rng.choice(LEADS)
        if size == "line":
            return lead.format_map(fill) + "\n"
        paragraphs = [lead.format_map(fill)]
        pool = [
            s
            for s in SENTENCES + (LM_SENTENCES if v["workload"].unit == "tokens" else ())
            if s is not lead and (v["mode"] == "compiled" or "compile" not in s)
        ]
        sentences = iter(rng.sample(pool, len(pool)))  # shuffled: no sentence twice in one body
        for _ in range({"short": 1, "medium": 2, "long": 7}[size]):
            picked = list(islice(sentences, rng.randint(2, 5)))
            if picked:
                paragraphs.append(" ".join(s.format_map(fill) for s in picked))
        if failure and status == "failed":
            paragraphs.append(" ".join(s.format_map(fill) for s in rng.sample(FAILURE_SENTENCES, rng.randint(1, 3))))
        elif status in STOP_SENTENCES:
            paragraphs.append(STOP_SENTENCES[status].format_map(fill))
        if adaptations:
            items = "\n".join(f"- {a['what']} ({a['kind']}, {a['effort']})" for a in adaptations)
            paragraphs.append(f"## Adaptations\n\n{items}")
        if size == "long" and v["done"]:
            paragraphs.append(self._profile(ctx))
        if size != "short":
            tail = self._log_tail(ctx, failure, 40 if size == "long" else 15)
            paragraphs.append(
                f"## Output\n\nThe last {len(tail)} lines of output.log:\n\n```text\n" + "\n".join(tail) + "\n```"
            )
        return "\n\n".join(paragraphs) + "\n"

    def _profile(self, ctx: _Context) -> str:
        rng, v = ctx.rng, ctx.values
        kernels = KERNELS[MESSAGE_FAMILY.get(v["backend"], "cpu")]
        share, rows = 100.0, []
        for kernel in rng.sample(kernels, len(kernels)):
            part = share * rng.uniform(0.2, 0.5)
            share -= part
            rows.append(f"| `{kernel}` | {part:.1f} | {rng.randrange(1, 400) * v['n']} |")
        return (
            "## Profile\n\nTop kernels over the steady steps:\n\n| kernel | % of step | calls |\n|---|---:|---:|\n"
            + "\n".join(rows)
        )

    def _log_tail(self, ctx: _Context, failure: dict[str, Any] | None, most: int) -> list[str]:
        rng, v = ctx.rng, ctx.values
        started = ctx.when - timedelta(seconds=v["wall"])
        epoch = started.timestamp()

        def stamp(seconds: float) -> str:
            return _log_time(epoch + seconds)

        fill = v | {"unit": v["workload"].unit, "graph": rng.randrange(1000, 99999), "ts": stamp(1)}
        lines = [t.format_map(fill) for t in LOG_START]
        fill["ts"] = stamp(8)
        lines += [t.format_map(fill) for t in LOG_BACKEND[v["backend"]]]
        if v["mode"] == "compiled":
            moment = started + timedelta(seconds=9)
            fill |= {
                "mmdd": f"{moment.month:02d}{moment.day:02d}",
                "hms": moment.isoformat(timespec="microseconds")[11:26],
            }
            lines += [t.format_map(fill) for t in LOG_COMPILED]
        step_s, steps, rate, unit, script = v["step_time"], v["steps"], v["tps"], fill["unit"], v["script"]
        begin = v["load"] + v["compile"]
        for step in range(max(v["done"] - rng.randint(most // 3, most), 1), v["done"] + 1):
            loss, jitter = 3.2 - step / (steps + 5), 0.97 + 0.06 * rng.random()
            lines.append(
                f"{stamp(begin + step * step_s)} INFO {script}:212 step {step}/{steps} loss {loss:.4f} "
                f"{rate / jitter:.1f} {unit}/s {step_s * jitter * 1000:.1f} ms/step"
            )
        if failure:
            lines += [t.format_map(fill) for t in TRACEBACK]
            lines += failure["message"].splitlines()
        else:
            lines.append(f"{stamp(v['wall'])} INFO {v['script']}:240 finished {steps} steps in {v['wall']} s")
        return lines[-most:]

    # -- writing ------------------------------------------------------------------------------------------------

    def _text(self, data: dict[str, Any], body: str) -> str:
        entry = new_entry(data.pop("id"), data.pop("title"), data.pop("kind"), **data)
        return f"{frontmatter.FENCE}\n{frontmatter.dump(entry.data)}{frontmatter.FENCE}\n{body}"


def _next_minor(version: str) -> str:
    major, minor, *_ = version.split(".")
    return f"{major}.{int(minor) + 1}.0"


def _write_block(entries: Path, seed: int, count: int, start: date, days: int, block: int) -> None:
    folders: set[Path] = set()
    for relative, text in _Generator(seed, count, start, days, block).entries():
        path = entries / relative
        if path.parent not in folders:
            path.parent.mkdir(parents=True, exist_ok=True)
            folders.add(path.parent)
        # os.write skips the buffered file object (half the cost of write_bytes); no fsync: a fixture, not evidence.
        descriptor = os.open(path, WRITE_FLAGS, 0o644)
        try:
            data = memoryview(text.encode("utf-8"))
            while data:
                data = data[os.write(descriptor, data) :]
        finally:
            os.close(descriptor)


def generate(
    root: Path,
    count: int,
    seed: int = 0,
    *,
    start: date = date(2025, 1, 1),
    days: int = 700,
    workers: int | None = None,
    cache: Path | None = None,
) -> KnowledgeBase:
    """Make a knowledge base at root and write `count` entries into it; the same seed gives the same bytes, whatever
    the number of worker processes (default: one per CPU). With `cache` (a folder), the entries are copied from a
    base generated before with the same arguments and the same code, else generated and kept there."""
    if not 0 <= count <= MAX_COUNT:
        raise ValueError(f"count must be between 0 and {MAX_COUNT}")
    kb, _ = KnowledgeBase.init(root)
    kept = cache / _cache_key(count, seed, start, days) if cache is not None else None
    if kept is not None and kept.is_dir():
        shutil.copytree(kept, kb.entries_path, dirs_exist_ok=True)
        return kb
    _write(kb, count, seed, start, days, workers)
    if kept is not None:
        making = kept.with_name(f"{kept.name}.{os.getpid()}")
        shutil.copytree(kb.entries_path, making)
        making.rename(kept)  # whole or not at all: a run killed while copying leaves only the temporary folder
    return kb


def default_cache() -> Path:
    """Where the benchmarks keep generated bases: $KB_BENCH_CACHE, else ~/.cache/kb-bench."""
    return Path(os.environ.get("KB_BENCH_CACHE") or Path.home() / ".cache" / "kb-bench")


def _cache_key(count: int, seed: int, start: date, days: int) -> str:
    """What a base's bytes depend on: the arguments, this generator and its tables, kb's writer and PyYAML's
    release."""
    import yaml

    digest = hashlib.sha256(repr((count, seed, start.isoformat(), days, yaml.__version__)).encode())
    for module in (__file__, VOCABULARY_PATH, frontmatter.__file__, sys.modules[new_entry.__module__].__file__):
        digest.update(Path(str(module)).read_bytes())
    return f"{count}-{seed}-{digest.hexdigest()[:16]}"


def _write(kb: KnowledgeBase, count: int, seed: int, start: date, days: int, workers: int | None) -> None:
    blocks = range(-(-count // BLOCK))
    write = partial(_write_block, kb.entries_path, seed, count, start, days)
    workers = min(workers or os.cpu_count() or 1, len(blocks))
    if workers <= 1:
        list(map(write, blocks))
    else:
        with ProcessPoolExecutor(workers) as pool:
            list(pool.map(write, blocks))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.generate", description=__doc__)
    parser.add_argument("root", type=Path, help="where to make the knowledge base")
    parser.add_argument("--count", type=int, default=10_000, help="how many entries (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="the seed: the same seed gives the same bytes")
    parser.add_argument("--workers", type=int, default=None, help="processes to write with (default: one per CPU)")
    parser.add_argument("--cache", type=Path, default=None, help="copy from (else keep in) this folder of bases")
    args = parser.parse_args()
    started = time.perf_counter()
    kb = generate(args.root, args.count, args.seed, workers=args.workers, cache=args.cache)
    took = time.perf_counter() - started
    size = sum(path.stat().st_size for path in kb.iter_entry_paths())
    print(f"{args.count} entries ({size / 1e6:.1f} MB) in {kb.entries_path} in {took:.2f} s")


if __name__ == "__main__":
    main()
