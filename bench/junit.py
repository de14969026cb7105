"""What reading a JUnit file with one huge failure message costs: `read_junit` against the standard library's
streaming parse of the same file (`xml.etree.ElementTree.iterparse`, reading 16 KB at a time), measured in the
same run. iterparse alone was how kb read such files: before 2.6, expat parses an unfinished element again with
every chunk, so its time grows with the square of the message's size."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from bench.timing import alternate, machine


def _file(folder: Path, megabytes: int) -> Path:
    message = "x" * (megabytes * 1_000_000)
    path = folder / "big.xml"
    path.write_text(
        f'<testsuite name="s"><testcase classname="t" name="big"><failure message="{message}">{message}'
        "</failure></testcase></testsuite>"
    )
    return path


def run(quick: bool) -> None:
    """A message of 16 MB (in its attribute and its text), medians of 5; `quick`: 2 MB, once."""
    measure(megabytes=2 if quick else 16, repeats=1 if quick else 5)


def measure(megabytes: int, repeats: int) -> None:
    from ingest.importers.junit import read_junit

    with tempfile.TemporaryDirectory(prefix="kb-bench-") as folder:
        path = _file(Path(folder), megabytes)

        def kb_read() -> float:
            started = time.process_time()
            with tempfile.TemporaryDirectory(dir=folder) as work:
                read_junit([path], Path(work))
            return time.process_time() - started

        def iterparse() -> float:
            started = time.process_time()
            for _ in ET.iterparse(path, events=("start", "end")):
                pass
            return time.process_time() - started

        samples = alternate({"kb": kb_read, "iterparse": iterparse}, repeats)
    kb_s, plain_s = statistics.median(samples["kb"]), statistics.median(samples["iterparse"])
    print(f"a JUnit failure message of {megabytes} MB, CPU seconds, medians of {repeats}; {machine()}")
    print(f"read_junit {kb_s:.2f} s, iterparse alone {plain_s:.2f} s: {plain_s / kb_s:.1f}x faster than iterparse")


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
