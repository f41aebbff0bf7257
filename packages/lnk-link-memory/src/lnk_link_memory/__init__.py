"""Link Memory: the agent's memory, an MCP server over its own folder"""

import os

# Comparing a query with every vector is one matrix-vector product, bound by memory rather than
# cores: more BLAS threads only spin beside the search's words thread (a hybrid search took half
# as much CPU again with them on two cores). One, unless the environment says otherwise; set
# before numpy is first imported, which is what reads it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
