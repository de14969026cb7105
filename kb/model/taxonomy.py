"""The words entries use for kinds, statuses and failure classes (see docs/entry-format.md)."""

KINDS = ("run", "coverage", "decision", "report", "note", "release")
STATUSES = ("completed", "failed", "interrupted", "killed", "running")
FAILURE_CLASSES = (
    "compile_error", "compile_timeout", "unsupported_op", "cpu_fallback", "graph_break", "recompile", "oom",
    "numerical_mismatch", "timeout", "crash", "interrupted", "environment", "other",
)  # fmt: skip
