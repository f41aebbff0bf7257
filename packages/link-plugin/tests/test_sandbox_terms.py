"""The sandbox's terms without a model: the same as `link_plugin.sandbox` says, and what a program
starting a sandbox needs of link_plugin loads no pydantic."""

from __future__ import annotations

import subprocess
import sys
from typing import get_args

from link_plugin import providers, sandbox, sandbox_terms


def test_the_terms_are_the_contracts_own() -> None:
    assert get_args(sandbox.Mode) == sandbox_terms.MODES
    assert sandbox.SandboxRequest.model_fields["mode"].annotation == sandbox_terms.Mode
    for name in ("ANY_HOST", "PROXY_PORT", "TOOLS_PATH", "proxy_url", "tool_url"):
        assert getattr(sandbox, name) is getattr(sandbox_terms, name)
    assert providers.UPSTREAM_CA_ENV == "LNK_UPSTREAM_CA" and providers.UPSTREAM_ENV == "LNK_UPSTREAM_{name}"


def test_starting_a_sandbox_loads_no_model() -> None:
    """What `lnk-sandbox run` and its proxy read of link_plugin: the layout, the errors, these terms,
    the providers' table and the key store."""
    modules = "layout, errors, permissions, sandbox_terms, providers, keys"
    done = subprocess.run(
        [sys.executable, "-c", f"import sys; from link_plugin import {modules}; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "'link_plugin.providers'" in done.stdout
    assert "pydantic" not in done.stdout and "dataclasses" not in done.stdout
