"""The index: one SQLite file holding documents, chunks, their words (FTS5), vectors and links.

The one place memory's SQL lives. Everything else asks the store by name, a table at a time:

    store.documents   what each indexed document is called and holds   (documents.py)
    store.chunks      its chunks and their words, searched by FTS5     (chunks.py)
    store.vectors     each chunk's vector, read by a cache in order    (vectors.py)
    store.links       each document's links as written                 (links.py)
    store.removed     what was removed, for `list {since}`             (changes.py)
    store.skipped     what was left out, and why                       (changes.py)

The file's connections and transactions are Store's (index.py); the tables are made by schema.py,
which asks sqlite-utils only to complete an index made by an earlier release. Every statement is
SQL written out: where sqlite-utils costs several times the statement, and its import a fifth of
a second of every start.

    with store.write():            # one change, all or nothing
        gone = store.documents.remove(path)
        if gone:
            store.removed.note(path, *gone, time.time(), keep=10_000)
"""

from lnk_link_memory.store.index import BATCH_SECONDS, Batch, Corrupt, Store, corrupt
from lnk_link_memory.store.schema import SCHEMA_VERSION

__all__ = ["BATCH_SECONDS", "SCHEMA_VERSION", "Batch", "Corrupt", "Store", "corrupt"]
