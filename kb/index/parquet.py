"""`kb export --parquet DIR`: the index's entities as Parquet files for DuckDB, pandas, Spark or a BI tool.

One file per entity (kb.index.export.TABLES), written batch by batch, so memory holds one batch whatever the
size of the base; each file is written beside its final name and moved there whole, so a reader never opens
half an export of it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb.errors import KbError
from kb.index.export import TABLES, Table, iter_batches, snapshot


@dataclass(frozen=True)
class Exported:
    table: str
    path: Path
    rows: int


def _arrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise KbError("kb export --parquet needs pyarrow: pip install 'kb[export]' (or pip install pyarrow)") from None
    return pyarrow


def arrow_type(pa: Any, name: str) -> Any:
    return {
        "string": pa.string(),
        "float64": pa.float64(),
        "int64": pa.int64(),
        "list<string>": pa.list_(pa.string()),
        "reviews": pa.list_(pa.struct([("date", pa.string()), ("by", pa.string()), ("note", pa.string())])),
    }[name]


def export_parquet(
    db: sqlite3.Connection,
    out: Path,
    batch_rows: int | None = None,
    progress: Callable[[int], None] | None = None,
    entries: Path | None = None,
) -> list[Exported]:
    """Write TABLES into out (made if missing) as <table>.parquet, batch_rows at a time (default: each table's
    own); progress(rows) after each batch with the rows it wrote."""
    pa = _arrow()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KbError(f"cannot make {out}: {exc.strerror}; choose a writable folder") from None
    written: list[Exported] = []
    with snapshot(db):
        for table in TABLES:
            written.append(_write(pa, db, table, out, batch_rows, progress, entries))
    return written


def _write(
    pa: Any,
    db: sqlite3.Connection,
    table: Table,
    out: Path,
    batch_rows: int | None,
    progress: Callable[[int], None] | None,
    entries: Path | None,
) -> Exported:
    schema = pa.schema(
        [pa.field(c.name, arrow_type(pa, c.type), metadata={"description": c.description}) for c in table.columns],
        metadata={"description": table.description},
    )
    final = out / f"{table.name}.parquet"
    partial = out / f".{table.name}.parquet.partial"
    rows = 0
    try:
        with pa.parquet.ParquetWriter(partial, schema, compression="zstd") as writer:
            for batch in iter_batches(db, table, batch_rows, entries):
                columns = list(zip(*batch, strict=True))
                writer.write_batch(pa.record_batch(columns, schema=schema))
                rows += len(batch)
                if progress is not None:
                    progress(len(batch))
            if not rows:
                writer.write_table(schema.empty_table())
        os.replace(partial, final)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise KbError(f"cannot write {final}: {exc.strerror or exc}; nothing of it was kept") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return Exported(table.name, final, rows)
