"""Errors a user can act on.

Every error the library raises for bad input or a bad state is a `KbError`: its message says what is
wrong and what to do, and the CLI prints it as one line with the exit code of its class.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path

# OSError numbers of a disk that is full (or a file over a size limit), and of a place kb may not write to.
DISK_FULL = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
NOT_WRITABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
# Python keeps bytes that are not UTF-8 (in arguments, file names, JSON "\ud800" escapes) as lone surrogates,
# which no UTF-8 file can hold.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def quoted(text: str, limit: int = 80) -> str:
    """Text quoted for an error message, shortened: a pasted page need not be echoed whole."""
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


class ExitCode:
    """Exit codes of the `kb` command; a wrapped command's own code is passed on when it is recorded."""

    OK = 0
    ERROR = 1  # a user error: bad input, missing knowledge base, invalid entry
    USAGE = 2  # click's own code for unknown options and missing arguments


class KbError(Exception):
    """A problem the user can fix; the message is the whole explanation."""

    exit_code = ExitCode.ERROR


class KbNotFound(KbError):
    """No knowledge base was found where one was looked for."""


class EntryNotFound(KbError):
    """No entry has the id that was asked for."""


class EntryError(KbError):
    """An entry file or front matter that does not parse or validate.

    `problems` holds one `Problem` per finding so that `kb check` can list them all.
    """

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class Problem:
    """One finding in an entry: where it is (file, line, field) and what is expected."""

    __slots__ = ("field", "line", "message", "path")

    def __init__(self, path: Path | str | None, line: int | None, field: str | None, message: str):
        self.path = path
        self.line = line
        self.field = field
        self.message = message

    def __str__(self) -> str:
        where = str(self.path) if self.path is not None else "<entry>"
        if self.line is not None:
            where += f":{self.line}"
        field = f" {self.field}:" if self.field else ""
        return f"{where}:{field} {self.message}"

    def __repr__(self) -> str:
        return f"Problem({str(self)!r})"
