"""kb: a searchable evidence knowledge base for PyTorch hardware-backend evaluations.

The library API: open a knowledge base, read and write entries. Names load on first use, so that
`import kb` (and `kb --help`) stays fast.
"""

from __future__ import annotations

from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "Entry": "kb.model.entry", "new_entry": "kb.model.entry", "KnowledgeBase": "kb.store.knowledge_base",
    "KbError": "kb.errors",
    "KbNotFound": "kb.errors", "EntryError": "kb.errors", "EntryNotFound": "kb.errors", "Problem": "kb.errors",
}  # fmt: skip
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:  # not typing.Any: importing typing costs 0.01 s
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'kb' has no attribute {name!r}")
