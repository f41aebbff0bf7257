"""Which embedding model runs: the local default, a named one from Link's model server, or none."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from lnk_link_memory import models
from lnk_link_memory.models import LOCAL, ModelError, choose


def test_unset_means_the_local_default_and_none_means_words_only() -> None:
    assert choose(None, None).name == LOCAL and choose(None, None).server is None
    assert choose("none", "http://127.0.0.1:1").words_only


def test_a_name_memory_doesnt_know_is_refused() -> None:
    with pytest.raises(ModelError, match="isn't an embedding model memory knows"):
        choose("qwen3-embeding", "http://127.0.0.1:1")
    with pytest.raises(ModelError, match="isn't an embedding model"):
        choose("qwen3-embedding:../../x", "http://127.0.0.1:1")


def test_a_served_model_needs_the_server_link_gives() -> None:
    assert choose("qwen3-embedding:0.6b", "http://127.0.0.1:5/").server == "http://127.0.0.1:5"
    with pytest.raises(ModelError, match="LNK_MODEL_SERVER"):
        choose("qwen3-embedding", None)


def test_a_model_file_that_isnt_the_one_expected_is_refused(tmp_path: Path) -> None:
    tampered = tmp_path / "model.onnx"
    tampered.write_bytes(b"not the model")
    with pytest.raises(ModelError, match="SHA-256"):
        models._checked(tampered, "0" * 64, "The embedding model")


def test_the_default_model_embeds_offline_normalised_and_by_meaning() -> None:
    model = models.embedder(choose(None, None))
    vectors = model.embed(["The cat sat on the mat.", "A kitten rested on the rug.", "Quarterly tax filing deadline."])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
