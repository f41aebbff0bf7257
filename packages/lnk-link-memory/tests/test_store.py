"""The store is the one home of memory's SQL: every other module asks it by name."""

from __future__ import annotations

import ast
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import lnk_link_memory
from lnk_link_memory.store import SCHEMA_VERSION, Store

PACKAGE = Path(lnk_link_memory.__file__).parent
STORE = PACKAGE / "store"
_RUNS_SQL = {"execute", "executemany", "executescript"}
_SQL = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|BEGIN|COMMIT|ROLLBACK|SAVEPOINT)\b")
_SQL_LIBRARIES = {"sqlite_utils"}


def sql_in(module: Path) -> list[str]:
    """Where a module runs SQL, writes it, or reaches for a SQL library: `line: what`."""
    tree = ast.parse(module.read_text(), str(module))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RUNS_SQL:
            found.append(f"{node.lineno}: calls {node.func.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.match(node.value):
            found.append(f"{node.lineno}: SQL {node.value[:40]!r}")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found.extend(f"{node.lineno}: imports {n}" for n in names if n.split(".")[0] in _SQL_LIBRARIES)
    return found


def test_no_module_outside_the_store_runs_or_writes_sql() -> None:
    outside = {
        str(module.relative_to(PACKAGE)): sql_in(module)
        for module in sorted(PACKAGE.rglob("*.py"))
        if STORE not in module.parents
    }
    assert len(outside) > 20  # every module of the package was read
    assert {name: where for name, where in outside.items() if where} == {}


def test_the_check_finds_the_sql_the_store_holds() -> None:
    """The check above isn't blind: it finds each kind of SQL where the store keeps it."""
    found = [line for module in sorted(STORE.glob("*.py")) for line in sql_in(module)]
    assert any("calls execute" in line for line in found)
    assert any("calls executemany" in line for line in found)
    assert any("calls executescript" in line for line in found)
    assert any("SQL 'SELECT" in line for line in found)
    assert any("imports sqlite_utils" in line for line in found)


def _schema(db: sqlite3.Connection) -> list[tuple[str, str, str]]:
    return db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()


_OPENS = """
import sys
from pathlib import Path
from lnk_link_memory.store import Store
store = Store(Path(sys.argv[1]))
store.open()
store.close()
print("sqlite_utils" in sys.modules)
"""


def _opened_with_sqlite_utils(index: Path) -> bool:
    """Whether opening the index (in a process of its own) brought sqlite-utils in."""
    done = subprocess.run([sys.executable, "-c", _OPENS, str(index)], capture_output=True, text=True, check=True)
    return done.stdout.strip() == "True"


def test_an_index_made_by_an_earlier_release_loses_its_triggers_on_each_chunk(tmp_path: Path) -> None:
    """Its counter was moved by a trigger on each chunk added or moved; now a document's row moves it."""
    store = Store(tmp_path / "index.db")
    store.open()
    made = _schema(store.db())
    store.db().execute("CREATE TRIGGER chunk_added AFTER INSERT ON chunks BEGIN UPDATE counter SET n = n + 1; END")
    store.db().execute("CREATE TRIGGER chunk_moved AFTER UPDATE ON chunks BEGIN UPDATE counter SET n = n + 1; END")
    store.close()
    again = Store(tmp_path / "index.db")
    again.open()
    assert _schema(again.db()) == made
    again.close()


def test_an_index_made_by_an_earlier_release_is_completed_and_keeps_what_it_holds(tmp_path: Path) -> None:
    """A new index is made by the store's own SQL, the same tables sqlite-utils made before; an
    index lacking some of them gets them from sqlite-utils, and keeps its rows."""
    assert not _opened_with_sqlite_utils(tmp_path / "new.db")
    new = Store(tmp_path / "new.db")
    new.open()
    made = _schema(new.db())
    new.set_meta("note", "kept")
    db = new.db()
    db.execute("DROP TABLE skipped")
    db.execute("DROP INDEX documents_name")
    new.close()
    assert _opened_with_sqlite_utils(tmp_path / "new.db")  # lacking some: completed
    assert not _opened_with_sqlite_utils(tmp_path / "new.db")  # complete: opened as it is
    again = Store(tmp_path / "new.db")
    again.open()
    assert _schema(again.db()) == made
    assert again.meta("note") == "kept" and again.meta("schema") == SCHEMA_VERSION
    again.skipped.add("a.bin", "not a document", "")
    assert again.skipped.listing() == [("a.bin", "not a document")]
    again.close()
