"""Is it right? Compare outputs or a loss curve with a reference, with tolerances stated per dtype.

Tolerances default to PyTorch's own per-dtype defaults (those of `torch.testing.assert_close`), so a
bf16 run is judged by bf16 standards. The result is the entry's `numerics` section: the reference, the
tolerances, max absolute and relative error, the fraction of values out of tolerance, NaN/Inf counts,
the first step where a curve diverges, and a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

SIGNIFICANT = 6


def tolerances(actual: torch.Tensor, expected: torch.Tensor) -> tuple[float, float]:
    """(rtol, atol) that torch.testing.assert_close would use for these two tensors."""
    from torch.testing._comparison import default_tolerances

    return default_tolerances(actual, expected)


def compare(
    actual: torch.Tensor | Sequence[float],
    expected: torch.Tensor | Sequence[float],
    *,
    rtol: float | None = None,
    atol: float | None = None,
    reference: str | None = None,
    what: str = "outputs",
) -> dict[str, Any]:
    """Element-wise comparison of two tensors (or sequences), both moved to the CPU first."""
    actual_t = _tensor(actual)
    expected_t = _tensor(expected)
    if actual_t.shape != expected_t.shape:
        return {
            "compared": what,
            "reference": reference,
            "verdict": "fail",
            "reason": f"shape {tuple(actual_t.shape)} differs from the reference's {tuple(expected_t.shape)}",
        }
    default_rtol, default_atol = tolerances(actual_t, expected_t)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    a = actual_t.double()
    e = expected_t.double()
    both_finite = torch.isfinite(a) & torch.isfinite(e)
    diff = (a - e).abs()
    allowed = atol + rtol * e.abs()
    # Non-finite values agree only when both are the same (nan with nan, +inf with +inf), as assert_close decides.
    same_special = (torch.isnan(a) & torch.isnan(e)) | (torch.isinf(a) & (a == e))
    bad = torch.where(both_finite, diff > allowed, ~same_special)
    finite_diff = torch.where(both_finite, diff, torch.zeros_like(diff))
    relative = torch.where(both_finite & (e != 0), diff / e.abs(), torch.zeros_like(diff))
    total = a.numel()
    section = {
        "compared": what,
        "reference": reference,
        "dtype": str(actual_t.dtype).removeprefix("torch."),
        "reference_dtype": str(expected_t.dtype).removeprefix("torch."),
        "rtol": rtol,
        "atol": atol,
        "count": total,
        "max_abs_err": _round(finite_diff.max().item()) if total else 0.0,
        "max_rel_err": _round(relative.max().item()) if total else 0.0,
        "fraction_out_of_tolerance": _round(bad.sum().item() / total) if total else 0.0,
        "nan": int(torch.isnan(a).sum().item()),
        "inf": int(torch.isinf(a).sum().item()),
        "verdict": "fail" if bool(bad.any()) else "pass",
    }
    return {key: value for key, value in section.items() if value is not None}


def compare_curves(
    actual: Sequence[float],
    expected: Sequence[float],
    *,
    rtol: float = 0.05,
    atol: float = 0.0,
    reference: str | None = None,
    name: str = "loss",
) -> dict[str, Any]:
    """A loss curve against a reference curve, step by step over the common length.

    Curves from different backends drift apart by design (other kernels, other reduction orders), so the
    default tolerance is relative and loose (5%); the first divergent step is where it is first exceeded.
    """
    steps = min(len(actual), len(expected))
    section = compare(
        list(actual[:steps]), list(expected[:steps]), rtol=rtol, atol=atol, reference=reference, what=f"{name} curve"
    )
    if section.get("reason"):
        return section
    first = None
    for step in range(steps):
        a, e = actual[step], expected[step]
        if not (math.isfinite(a) and math.isfinite(e)) or abs(a - e) > atol + rtol * abs(e):
            first = step
            break
    section.pop("dtype", None)
    section.pop("reference_dtype", None)
    section["steps_compared"] = steps
    section["nan_steps"] = sum(1 for value in actual if math.isnan(value))
    section["inf_steps"] = sum(1 for value in actual if math.isinf(value))
    section["first_divergent_step"] = first
    if len(actual) != len(expected):
        section["length_mismatch"] = f"{len(actual)} steps against the reference's {len(expected)}"
    return section


def load_reference(path: Path) -> torch.Tensor | list[float]:
    """A saved reference: a tensor saved with torch.save, or a text file of one number per line."""
    if path.suffix in (".pt", ".pth"):
        loaded = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(loaded, torch.Tensor):
            raise ValueError(f"{path}: expected a saved tensor, found {type(loaded).__name__}")
        return loaded
    return [float(line) for line in path.read_text().split() if line.strip()]


def _tensor(value: torch.Tensor | Sequence[float]) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu")
    return torch.tensor(list(value), dtype=torch.float64)


def _round(value: float) -> float:
    return float(f"{value:.{SIGNIFICANT}g}") if math.isfinite(value) else value


def failure(section: dict[str, Any]) -> dict[str, Any]:
    """The failure section for a check that failed: the run completed, but its result is not trustworthy."""
    if "reason" in section:
        said = section["reason"]
    else:
        said = (
            f"{section.get('fraction_out_of_tolerance', 0):.3g} of {section.get('count', '?')} values out of "
            f"tolerance (rtol {section.get('rtol')}, atol {section.get('atol')}); max abs error "
            f"{section.get('max_abs_err')}"
        )
        if section.get("first_divergent_step") is not None:
            said += f"; first divergent step {section['first_divergent_step']}"
    where = f" against {section['reference']}" if section.get("reference") else ""
    return {
        "class": "numerical_mismatch",
        "message": f"numerics check of {section.get('compared', 'outputs')}{where} failed: {said}",
        "phase": "numerics",
        "assigned": "auto",
    }
