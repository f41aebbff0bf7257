"""Embedding models: which names memory knows, and the two ways it runs one.

The default runs on this machine with no torch and nothing downloaded: all-MiniLM-L6-v2 as int8
ONNX with its tokenizer, both files shipped in this package (`model/`, each SHA-256 checked on
load), run by onnxruntime (mean pooling, L2 normalised). The model's products are integer ones
(scripts/quantize_model.py makes the file): it loads in about 40 MiB and embeds a query in a few
milliseconds on one core. Any other model is asked
of the OpenAI-compatible /v1/embeddings address Link gives (what `lnk model serve` provides).
A name memory doesn't know is refused, so a typo never runs another model than asked.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from lnk_link_memory import allocator

Vectors = npt.NDArray[np.float32]

LOCAL = "all-minilm-l6-v2"
NONE = "none"
SERVED = (
    "qwen3-embedding",
    "nomic-embed-text",
    "mxbai-embed-large",
    "bge-m3",
    "bge-large",
    "snowflake-arctic-embed",
    "snowflake-arctic-embed2",
    "all-minilm",
    "embeddinggemma",
    "granite-embedding",
    "paraphrase-multilingual",
)
"""Embedding models a model server is asked for by name (a `:size` tag may follow)."""

_MODEL_SHA256 = "e940eb69b5196e6444ce4f7215de6619ced1d5227dbf16226f1650c21907ec8c"
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_MAX_TOKENS = 256
_TAG = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class ModelError(Exception):
    """A model that can't be used, in words for the person who named it."""


@dataclass(frozen=True)
class Choice:
    name: str
    """The model's name, as vectors are stored with it; `none` for words only."""
    server: str | None = None

    @property
    def words_only(self) -> bool:
        return self.name == NONE


def choose(named: str | None, server: str | None) -> Choice:
    """The model an agent's spec names (unset: the local default), refused if memory doesn't know it."""
    name = (named or LOCAL).strip().lower()
    if name == NONE:
        return Choice(NONE)
    if name == LOCAL:
        return Choice(LOCAL)
    base, _, tag = name.partition(":")
    if base not in SERVED or (tag and not _TAG.match(tag)):
        known = ", ".join((LOCAL, *SERVED, NONE))
        raise ModelError(f"{named!r} isn't an embedding model memory knows. Name one of: {known}.")
    if not server:
        raise ModelError(f"{name} is served by Link's model server, and Link gave none (LNK_MODEL_SERVER).")
    return Choice(name, server.rstrip("/"))


class Embedder(Protocol):
    name: str
    batch: int
    """How many texts go to the model at once."""

    def embed(self, texts: list[str]) -> Vectors: ...


def _normalised(vectors: npt.NDArray[np.floating]) -> Vectors:
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.asarray(matrix / np.maximum(norms, 1e-12), dtype=np.float32)


def _checked(path: Path, sha256: str, what: str) -> Path:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != sha256:
        raise ModelError(f"{what} at {path} is not the file memory expects (SHA-256 differs): reinstall it.")
    return path


class MiniLM:
    """all-MiniLM-L6-v2, int8 ONNX, on this machine."""

    name = LOCAL
    batch = 1
    """On one core, a batch runs no faster than its texts one by one, and pads each to the longest:
    one at a time takes the least memory (a batch of eight took 200 MiB more at its peak)."""

    def __init__(self) -> None:
        allocator.steady()
        import onnxruntime  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        files = importlib.resources.files("lnk_link_memory").joinpath("model")
        model = Path(str(files.joinpath("all-minilm-l6-v2-int8.onnx")))
        tokenizer = Path(str(files.joinpath("tokenizer.json")))
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        # Memory the model asks for is given back after each run, so an engine's size doesn't grow
        # with the largest batch it ever saw.
        options.enable_cpu_mem_arena = False
        # Every run on the thread that asks, one core each: a search's query runs beside a batch
        # being embedded instead of queueing behind it, and embedding leaves the other cores to
        # indexing words, searches and everything else on the machine. No pool, so nothing spins.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(
            str(_checked(model, _MODEL_SHA256, "The embedding model")), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = Tokenizer.from_file(str(_checked(tokenizer, _TOKENIZER_SHA256, "Its tokenizer")))
        self._tokenizer.enable_truncation(_MAX_TOKENS)
        self._tokenizer.enable_padding()
        self._inputs = {i.name for i in self._session.get_inputs()}

    def embed(self, texts: list[str]) -> Vectors:
        """Runs may overlap (onnxruntime sessions are safe to run from several threads): a query never
        waits for the batch the embedding thread is running."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = np.asarray(self._session.run(None, feed)[0], dtype=np.float32)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return _normalised(pooled)


class Served:
    """A model asked of an OpenAI-compatible /v1/embeddings address."""

    batch = 8
    """A model server runs a batch faster than its texts one by one."""

    def __init__(self, name: str, server: str) -> None:
        self.name = name
        base = server if server.endswith("/v1") else server + "/v1"
        self._url = base + "/embeddings"
        import httpx  # only here: it takes a tenth of a second to import, which words alone never need

        self._client = httpx.Client(timeout=httpx.Timeout(60.0, connect=5.0))

    def embed(self, texts: list[str]) -> Vectors:
        import httpx

        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        try:
            response = self._client.post(self._url, json={"model": self.name, "input": texts})
        except httpx.HTTPError as exc:
            raise ModelError(f"the model server at {self._url} can't be reached ({exc})") from exc
        if response.status_code != 200:
            raise ModelError(f"the model server answered {response.status_code}: {response.text[:200]}")
        try:
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = np.array([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise ModelError(f"the model server's answer isn't OpenAI embeddings ({exc})") from exc
        if vectors.shape[0] != len(texts):
            raise ModelError(f"the model server gave {vectors.shape[0]} vectors for {len(texts)} texts")
        return _normalised(vectors)


_loaded: dict[tuple[str, str | None], Embedder] = {}
_loading = threading.Lock()


def embedder(choice: Choice) -> Embedder:
    """The process's one instance of a model, shared by every folder it serves."""
    if choice.words_only:
        raise ModelError("words only: no embedding model is used")
    key = (choice.name, choice.server)
    with _loading:
        if key not in _loaded:
            _loaded[key] = MiniLM() if choice.server is None else Served(choice.name, choice.server)
        return _loaded[key]
