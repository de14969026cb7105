"""Classify an exception raised inside a run by the failure taxonomy, looking through its causes.

A compiler failure often wraps the real cause (inductor raising BackendCompilerFailed around an
out-of-memory error), so the whole chain of `__cause__` and `__context__` is read and the strongest
class wins, by the same precedence as the log signatures use.
"""

from __future__ import annotations

import traceback
from typing import Any

from ingest import signatures

# Exception type names (matched anywhere in the chain) and the class each one means.
BY_TYPE = {
    "OutOfMemoryError": "oom",
    "MemoryError": "oom",
    "CompileTimeout": "compile_timeout",
    "BackendCompilerFailed": "compile_error",
    "InductorError": "compile_error",
    "CppCompileError": "compile_error",
    "InternalTorchDynamoError": "compile_error",
    "Unsupported": "graph_break",
    "ModuleNotFoundError": "environment",
    "ImportError": "environment",
    "TimeoutError": "timeout",
    "KeyboardInterrupt": "interrupted",
    "RunTerminated": "interrupted",
}
MESSAGE_MAX = 500


def chain(exc: BaseException) -> list[BaseException]:
    """The exception and every cause or context behind it, outermost first, each once."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not other for other in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def classify(exc: BaseException) -> str:
    """The failure class for an exception, from its type or message anywhere in the chain."""
    return _classified(exc)[0]


def _classified(exc: BaseException) -> tuple[str, str | None]:
    """The class, and the explanation of the signature that gave it (None when a type or nothing did)."""
    found: list[tuple[str, str | None]] = []
    for link in chain(exc):
        for klass in type(link).__mro__:
            if klass.__name__ in BY_TYPE:
                found.append((BY_TYPE[klass.__name__], None))
                break
        finding = signatures.propose(signatures.scan_lines(_lines(link)))
        if finding is not None:
            found.append((finding.failure_class, signatures.explain(finding)))
    if not found:
        return "crash", None
    best = min(_rank(klass) for klass, _ in found)
    explained = [explanation for klass, explanation in found if _rank(klass) == best and explanation]
    return next(klass for klass, _ in found if _rank(klass) == best), (explained[0] if explained else None)


def describe(exc: BaseException, *, phase: str | None, step: int | None, rank: int | None) -> dict[str, Any]:
    """The entry's failure section for an exception raised in a run."""
    root = chain(exc)[-1]
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    failure_class, explanation = _classified(exc)
    failure = {
        "class": failure_class,
        "message": f"{type(exc).__name__}: {exc}"[:MESSAGE_MAX],
        "explanation": explanation,
        "where": f"{where.filename}:{where.lineno} in {where.name}" if where else None,
        "phase": phase,
        "step": step,
        "rank": rank,
        "assigned": "auto",
    }
    if root is not exc:
        failure["evidence"] = f"caused by {type(root).__name__}: {root}"[:MESSAGE_MAX]
    return {key: value for key, value in failure.items() if value is not None}


def _lines(exc: BaseException) -> list[str]:
    return f"{type(exc).__module__}.{type(exc).__name__}: {exc}".splitlines()


def _rank(failure_class: str) -> int:
    order = signatures.PRECEDENCE
    return order.index(failure_class) if failure_class in order else len(order)
