"""The knowledge-base folder: finding it, the entries in it, their attachments, atomic writes.

Layout:
    kb.toml                 settings; its presence marks the root
    entries/<id>.md         one entry: YAML front matter + Markdown body (the truth)
    entries/<id>/           that entry's attachments (logs, diffs, traces, the run folder)
    .kb/                    derived caches, ignored by git and safe to delete (where there is none and none can be
                            made, a folder of the user's in the temporary folder: see `borrowed_cache`)
Entries may be moved into sub-folders of entries/ by hand; every scan looks at the whole tree.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from kb.errors import DISK_FULL, LONE_SURROGATE, EntryError, EntryNotFound, KbError, Problem
from kb.model import ids
from kb.model.entry import Entry
from kb.store import atomic, folders
from kb.store.home import CACHE, CONFIG_NAME, find_root

if TYPE_CHECKING:
    from kb.store.config import Config

ENTRIES = "entries"
CREATE_ATTEMPTS = 8
ATTACHMENT_NAME_MAX = 128
NAME_MAX = 200  # bytes: the temporary file written beside a file adds about 30 to its name, and 255 is the limit
TEXT_SNIFF = 8192
REDACT_BLOCK = 1 << 20


def borrowed_cache(root: Path) -> Path:
    """Where the caches of a knowledge base that has no `.kb/` and cannot be written (a fresh clone on a read-only
    mount) are kept: a folder named by its path in one of the user's own (0700) in the temporary folder, so that
    every reading command answers from an index built there."""
    import getpass
    import hashlib
    import tempfile

    mine = Path(tempfile.gettempdir()) / f"kb-{getpass.getuser()}"
    mine.mkdir(mode=0o700, exist_ok=True)
    if mine.is_symlink() or mine.stat().st_uid != os.getuid() or stat.S_IMODE(mine.stat().st_mode) & 0o077:
        raise KbError(f"{root} cannot be written and {mine}, where kb would index it, is not yours alone; remove it")
    return mine / f"{root.name}-{hashlib.sha256(str(root).encode()).hexdigest()[:16]}"


def _scan_enters(folder: os.DirEntry, files: set[str]) -> bool:
    """Whether scan() enters a folder: not hidden, not an entry's attachment folder (beside <name>.md), and named
    in text (see names_not_text)."""
    return not folder.name.startswith(".") and f"{folder.name}.md" not in files and is_text_name(folder.name)


def _is_entry_file(item: os.DirEntry) -> bool:
    name = item.name
    return name.endswith(".md") and not name.startswith(".") and is_text_name(name) and folders.is_no_folder(item)


def is_text_name(name: str) -> bool:
    """Whether a name read from the disk is UTF-8 text: bytes that are not come back as lone surrogates."""
    return name.isascii() or LONE_SURROGATE.search(name) is None


def shown_name(name: str) -> str:
    """A name or path read from the disk, as text that can be shown and stored: bytes that are not UTF-8 as \\xNN."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def entry_file_names(items: list[os.DirEntry]) -> tuple[list[str], list[str]]:
    """A folder's listing (in name order) as scan() takes it: its entry files' names and the folders it enters."""
    below = [item for item in items if folders.is_dir(item)]
    files = {item.name for item in items if folders.is_file(item)} if below else set()
    return [item.name for item in items if _is_entry_file(item)], [
        item.name for item in below if _scan_enters(item, files)
    ]


class KnowledgeBase:
    def __init__(self, root: Path):
        self.root = root

    def __repr__(self) -> str:
        return f"KnowledgeBase({str(self.root)!r})"

    @classmethod
    def find(cls, explicit: Path | str | None = None, start: Path | None = None) -> KnowledgeBase:
        """The knowledge base named by `explicit`, else $KB_HOME, else the nearest folder upward with a kb.toml."""
        return cls(find_root(explicit, start))

    @classmethod
    def init(cls, root: Path) -> tuple[KnowledgeBase, bool]:
        """Make (or complete) a knowledge base at root; returns it and whether anything was created."""
        root = root.expanduser().resolve()
        if root.exists() and not root.is_dir():
            raise KbError(f"{root} exists and is not a folder; choose another path for the knowledge base")
        created = False
        try:
            root.mkdir(parents=True, exist_ok=True)
            if not (root / CONFIG_NAME).exists():
                from kb.store.config import TEMPLATE

                atomic.write_text(root / CONFIG_NAME, TEMPLATE)
                created = True
            kb = cls(root)
            for folder in (kb.entries_path, kb.cache_path):
                if not folder.is_dir():
                    folder.mkdir()
                    created = True
            kb.ensure_cache()
        except PermissionError as exc:
            raise KbError(
                f"cannot write the knowledge base at {root}: {exc.strerror}; choose a writable folder"
            ) from None
        return kb, created

    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_NAME

    @property
    def entries_path(self) -> Path:
        return self.root / ENTRIES

    @cached_property
    def cache_path(self) -> Path:
        own = self.root / CACHE
        return own if own.is_dir() or os.access(self.root, os.W_OK) else borrowed_cache(self.root)

    @property
    def cache_borrowed(self) -> bool:
        """Whether the caches are kept outside the knowledge base, which has no `.kb/` and cannot be written."""
        return self.cache_path != self.root / CACHE

    @cached_property
    def config(self) -> Config:
        from kb.store.config import load_config  # its settings classes cost the commands that read none (kb ls)

        return load_config(self.config_path)

    def ensure_cache(self) -> Path:
        """The cache folder, with a .gitignore of its own so git never picks up derived data."""
        self.cache_path.mkdir(exist_ok=True)
        ignore = self.cache_path / ".gitignore"
        if not ignore.exists():
            atomic.write_text(ignore, "# derived data, rebuilt by kb\n*\n")
        return self.cache_path

    def entry_path(self, entry_id: str) -> Path:
        return self.entries_path / f"{_checked_id(entry_id)}.md"

    def attachments_path(self, entry: Entry | str) -> Path:
        """An entry's attachment folder: beside its file, named by its id."""
        if isinstance(entry, Entry) and entry.path is not None:
            return entry.path.with_suffix("")
        return self.entries_path / _checked_id(entry if isinstance(entry, str) else entry.id)

    def iter_entry_paths(self) -> Iterator[Path]:
        """Every entry file, in path order; attachment folders (a folder beside a same-named .md) are skipped."""
        root = self.entries_path
        for relative, _ in self.scan():
            yield root / relative

    def scan(
        self, under: str = "", on_folder: Callable[[str, str], None] | None = None
    ) -> Iterator[tuple[str, os.DirEntry]]:
        """(path relative to entries/, directory entry) for every entry file: the cheap walk the index syncs by.

        In scan_order, below `under` (a folder relative to entries/, ending in '/'; all of entries/ by default).
        Hidden names are skipped, and so are attachment folders (a folder beside a same-named .md); linked
        folders are followed, each once. `on_folder(relative, path)` is called on each folder before it is
        listed (kb.store.folders.walk).
        """
        for prefix, files in self.scan_folders(under, on_folder):
            yield from ((prefix + item.name, item) for item in files)

    def scan_folders(
        self, under: str = "", on_folder: Callable[[str, str], None] | None = None
    ) -> Iterator[tuple[str, list[os.DirEntry]]]:
        """scan() a folder at a time: (folder relative to entries/, "" or "2026/", and its entry files)."""
        top = str(self.entries_path / under)
        for prefix, items in folders.walk(top, under, enter=_scan_enters, on_folder=on_folder):
            yield prefix, [item for item in items if _is_entry_file(item)]

    def names_not_text(self) -> list[tuple[str, bool]]:
        """The entry files and folders scan() leaves out because their names are not UTF-8 text (copied from a
        system in another encoding): no index, page or JSON can name them. Each as (path, whether a folder), the
        path's bytes that are not UTF-8 written \\xNN."""
        found = []
        for _, items in folders.walk(str(self.entries_path), enter=_scan_enters):
            files = {item.name for item in items if folders.is_file(item)}
            for item in items:
                if item.name.startswith(".") or is_text_name(item.name):
                    continue
                folder = folders.is_dir(item)
                if (folder and f"{item.name}.md" not in files) or (not folder and item.name.endswith(".md")):
                    found.append((shown_name(item.path), folder))
        return found

    @staticmethod
    def scan_order(relative: str) -> tuple[tuple[int, str], ...]:
        """A sort key giving scan()'s order: in each folder its files by name, then its folders by name."""
        *parents, name = relative.split("/")
        return (*((1, parent) for parent in parents), (0, name))

    def is_entry_path(self, relative: str) -> bool:
        """Whether scan() would list this path (relative to entries/, with '/'), were the file there."""
        *names, name = parts = relative.split("/")
        if not name.endswith(".md") or any(
            part.startswith(".") or not part or not is_text_name(part) for part in parts
        ):
            return False
        parent = self.entries_path
        for folder in names:  # inside an entry's attachment folder: not an entry
            if (parent / f"{folder}.md").is_file():
                return False
            parent = parent / folder
        return True

    def iter_entries(self, problems: list[Problem] | None = None) -> Iterator[Entry]:
        """Every entry that parses; each one that does not is added to `problems` and the scan goes on."""
        for path in self.iter_entry_paths():
            try:
                yield Entry.read(path, self.root)
            except EntryError as exc:
                if problems is not None:
                    problems.extend(exc.problems)
            except OSError as exc:
                if problems is not None:
                    problems.append(Problem(path, None, None, f"cannot read: {exc.strerror}"))

    def locate(self, ref: str) -> Path:
        """The file of an entry given its id, a unique id prefix, its random suffix (or at least 4 characters
        of it, as git takes a short hash), or a path to the file."""
        candidate = Path(ref)
        with contextlib.suppress(OSError):  # a name the file system cannot hold is no file: look it up as an id
            if candidate.suffix == ".md" and candidate.is_file():
                return candidate.resolve()
        if ids.is_valid_id(ref) and self.entry_path(ref).is_file():
            return self.entry_path(ref)
        stems = {path.stem: path for path in self.iter_entry_paths()}
        if ref in stems:
            return stems[ref]
        matches = sorted(stem for stem in stems if stem.startswith(ref)) if ref else []
        if not matches and ids.SHORT_PATTERN.match(ref):  # a short id: the random suffix, or its start
            matches = sorted(stem for stem in stems if (ids.suffix(stem) or "").startswith(ref))
        if len(matches) == 1:
            return stems[matches[0]]
        if len(matches) > 1:
            shown = ", ".join(matches[:5]) + (" ..." if len(matches) > 5 else "")
            raise EntryNotFound(f"'{ref}' matches {len(matches)} entries ({shown}); give more of the id")
        import difflib

        near = difflib.get_close_matches(ref, list(stems), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(near)}?" if near else "; 'kb ls' lists the entries"
        raise EntryNotFound(f"no entry '{ref}' in {self.entries_path}{hint}")

    def load(self, ref: str) -> Entry:
        return Entry.read(self.locate(ref), self.root)

    def remove(self, entry: Entry) -> None:
        """Delete an entry's file and its attachments (a recording the person asked not to keep)."""
        folder = self.attachments_path(entry)
        if folder.is_dir():
            import shutil

            shutil.rmtree(folder)
        (entry.path or self.entry_path(entry.id)).unlink(missing_ok=True)

    def create(self, entry: Entry) -> Entry:
        """Write a new entry under a fresh id; on the rare id clash the random suffix is drawn again."""
        _mask(entry)
        entry.validate()
        for _ in range(CREATE_ATTEMPTS):
            path = self.entry_path(entry.id)
            try:
                atomic.write_text(path, entry.serialise(), exclusive=True)
            except FileExistsError:
                entry.data["id"] = ids.reroll(entry.id)
                continue
            except OSError as exc:
                raise _write_error(path, exc) from None
            entry.path = path
            return entry
        raise KbError(f"could not find a free id for '{entry.id}' after {CREATE_ATTEMPTS} tries")

    def save(self, entry: Entry) -> bool:
        """Validate and write an existing entry atomically; returns False (and writes nothing) when unchanged."""
        _mask(entry)
        entry.validate()
        path = entry.path or self.entry_path(entry.id)
        text = entry.serialise()
        if path.is_file():
            try:
                current = path.read_text("utf-8")
                if current == text:
                    return False
                existing = Entry.parse(current, path)  # the same data written another way (by hand) stays as is
                if existing.data == entry.data and existing.body == entry.body:
                    return False
            except (EntryError, UnicodeDecodeError):
                pass  # the file on disk is broken: replacing it is the repair
        try:
            atomic.write_text(path, text)
        except OSError as exc:
            raise _write_error(path, exc) from None
        entry.path = path
        return True

    def attach(self, entry: Entry, source: Path, name: str | None = None) -> Path:
        """Copy a file into the entry's attachment folder, masking secrets in text; returns where it went."""
        return self.copy_in(source, self.attachment_target(entry, name or source.name))

    def copy_in(self, source: Path, target: Path) -> Path:
        """Copy one file: text through the masker (bounded memory), in its own encoding, every other byte as it
        was (a Latin-1 byte, a NUL); a file of a binary format byte for byte."""
        try:
            _copy_masked(source, target)
        except OSError as exc:
            raise KbError(f"cannot attach {source}: {exc.strerror}") from None
        return target

    def mask_files(self, folder: Path) -> list[str]:
        """Mask the text files a run wrote into its folder itself (the run folder), and the names of its files and
        folders: they are published with the entry. Links are left alone (kb reads and publishes only files inside
        the knowledge base). Masking never fails open: a file that cannot be masked where it is (a name too long
        for the temporary beside it, an I/O error) is kept masked under a short name, or else removed. Returns
        what was renamed or removed, for the entry to say (the run's own outcome is not touched)."""
        said: list[str] = []
        for root, dirs, files in os.walk(folder, topdown=False) if folder.is_dir() else ():
            for name in files:
                path = Path(root, name)
                if not path.is_symlink() and not name.startswith(".") and path.is_file():
                    said += _mask_file(path, folder)
            for name in dirs:
                masked = masked_name(name)
                if masked != name and not Path(root, name).is_symlink():
                    target = _free(Path(root, masked))
                    os.rename(Path(root, name), target)
                    said.append(f"{target.relative_to(folder).as_posix()}: folder renamed, its name held a credential")
        return said

    def attachment_target(self, entry: Entry, name: str) -> Path:
        """A path inside the entry's attachment folder for `name`, never outside it, never over an existing file."""
        folder = self.attachments_path(entry)
        folder.mkdir(parents=True, exist_ok=True)
        return _free(folder / safe_name(name))

    def relative(self, entry: Entry, target: Path) -> str:
        base = (entry.path or self.entry_path(entry.id)).parent
        return target.relative_to(base).as_posix()


def _write_error(path: Path, exc: OSError) -> KbError:
    full = exc.errno in DISK_FULL
    advice = "free some disk space" if full else "check the entries folder is writable"
    return KbError(f"cannot write {path}: {exc.strerror}; {advice}")


def _mask(entry: Entry) -> None:
    """Every entry is masked where it is written, so that no command, import or later change can forget it."""
    from kb.secrets.redact import MASK, NAME_MASK, redact_fields, redact_text

    entry.data = redact_fields(entry.data)
    tags = entry.data.get("tags")
    if isinstance(tags, list):
        entry.data["tags"] = [tag.replace(MASK, NAME_MASK) if isinstance(tag, str) else tag for tag in tags]
    entry.body = redact_text(entry.body)


# Formats that are never text, whatever their first bytes decode to: images, archives, compressed data,
# executables, databases, arrays.
_BINARY = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"%PDF", b"PK\x03\x04", b"\x7fELF", b"\x1f\x8b", b"BZh",
           b"\xfd7zXZ", b"(\xb5/\xfd", b"SQLite format 3\x00", b"\x93NUMPY", b"\x80\x02", b"\x80\x04")  # fmt: skip


def text_codec(head: bytes) -> str | None:
    """How a file's text is encoded (UTF-8 standing for any ASCII-based one: other bytes pass through as they
    are), or None for a binary file. A NUL or two among text (a log that caught one) is still text."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    if head.startswith(_BINARY):
        return None
    if len(head) >= 8 and not head[1::2].count(0) and head[0::2].count(0) > len(head) // 4:
        return "utf-16-be"
    if len(head) >= 8 and not head[0::2].count(0) and head[1::2].count(0) > len(head) // 4:
        return "utf-16-le"
    return "utf-8" if head.count(0) <= len(head) // 1000 + 1 else None


def _copy_masked(source: Path, target: Path) -> None:
    with open(source, "rb") as handle:
        codec = text_codec(handle.read(TEXT_SNIFF))
    if codec is None and source == target:
        return
    # As every atomic write: never half a file, and a killed writer's leftover is known by its name. Without
    # fsync, as before: a run folder may hold thousands of files.
    if codec is None:
        import shutil

        with open(source, "rb") as src, atomic.replacing(target, durable=False) as dst:
            shutil.copyfileobj(src, dst, REDACT_BLOCK)
        return
    from kb.secrets.redact import redact_pieces

    errors = "surrogateescape" if codec == "utf-8" else "replace"  # UTF-8 and Latin-1 bytes come back unchanged
    text = {"encoding": codec, "errors": errors, "newline": ""}
    with open(source, **text) as src, atomic.replacing(target, "x", durable=False, **text) as dst:
        if source == target:  # masked in place: the file keeps who may read it
            os.chmod(dst.fileno(), stat.S_IMODE(os.fstat(src.fileno()).st_mode))
        dst.writelines(redact_pieces(src, REDACT_BLOCK))


def masked_name(name: str) -> str:
    """A file or folder name with any credential in it masked (`redacted`), bounded to NAME_MAX bytes with a digest
    of the whole in place of the middle, so that kb can always write the temporary file beside it."""
    from kb.secrets.redact import redact_name

    masked = redact_name(name)
    if len(masked.encode("utf-8", "surrogateescape")) <= NAME_MAX:
        return masked
    import hashlib

    _stem, dot, suffix = masked.rpartition(".")
    keep = "." + suffix[:16] if dot and suffix.isascii() else ""
    digest = hashlib.sha256(masked.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    head = masked.encode("utf-8", "surrogateescape")[: NAME_MAX // 2].decode("utf-8", "ignore")
    return f"{head}-{digest}{keep}"


def _free(target: Path) -> Path:
    """`target`, or the same name numbered, whichever does not exist yet."""
    stem, dot, suffix = target.name.partition(".")
    counter = 2
    while target.exists():
        target = target.with_name(f"{stem}-{counter}{dot}{suffix}")
        counter += 1
    return target


def _mask_file(path: Path, folder: Path) -> list[str]:
    """Mask one file of a run folder in place, or under a masked or shorter name; remove it if neither works."""
    masked = masked_name(path.name)
    shown = path.with_name(masked).relative_to(folder).as_posix()
    try:
        if masked == path.name:
            _copy_masked(path, path)
            return []
        target = _free(path.with_name(masked))
        _copy_masked(path, target)
        path.unlink()
        return [f"{target.relative_to(folder).as_posix()}: renamed, its name was too long or held a credential"]
    except OSError as exc:
        problem = exc.strerror or str(exc)
    try:
        import hashlib

        fallback = _free(path.with_name(f"kb-masked-{hashlib.sha256(masked.encode()).hexdigest()[:12]}.txt"))
        _copy_masked(path, fallback)
        path.unlink()
        return [f"{fallback.relative_to(folder).as_posix()}: kept under this name; {shown} could not be masked "
                f"where it was ({problem})"]  # fmt: skip
    except OSError:
        pass
    try:
        path.unlink()
    except OSError as exc:
        raise KbError(f"cannot mask secrets in {path}, nor remove it: {exc.strerror}") from None
    return [f"{shown}: removed, it could not be masked ({problem})"]


def safe_name(name: str) -> str:
    """A file name that stays inside its folder: no separators, no '..', no NUL, no leading dot, bounded length,
    no credential (masked as in the entry that lists it, so that the two agree)."""
    from kb.secrets.redact import redact_name

    base = redact_name(re.split(r"[\\/]", name.replace("\x00", ""))[-1])
    base = re.sub(r"[^A-Za-z0-9._+-]+", "_", base).lstrip(".") or "attachment"
    if len(base) > ATTACHMENT_NAME_MAX:
        _stem, dot, suffix = base.rpartition(".")
        keep = suffix[:16] if dot else ""
        base = base[: ATTACHMENT_NAME_MAX - len(keep) - 1] + ("." + keep if keep else "")
    return base


def _checked_id(entry_id: str) -> str:
    if not ids.is_valid_id(entry_id):
        raise KbError(f"'{entry_id}' is not a valid entry id (expected e.g. 2026-11-30-my-run-3f9a2c)")
    return entry_id
