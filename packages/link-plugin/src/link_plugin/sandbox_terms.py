"""The sandbox's terms that need no model: its modes, where its proxy answers, the tools' path
on it, the mark for any host, and what the proxy reads from its own environment.

`link_plugin.sandbox` offers every one of these too; they live here, apart from its models, so
a program that needs only them (`lnk-sandbox run`, which starts a sandbox in a few milliseconds)
imports no pydantic.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is loaded only by a program that reads `Mode` at run time
if TYPE_CHECKING:
    from typing import Literal

TOOLS_PATH = "/_link/tools/"
"""Tools are served to a sandboxed harness on its proxy: http://<proxy>/_link/tools/<tool>/mcp."""

PROXY_PORT = 3128
"""Where the proxy answers inside a Linux sandbox's own network (127.0.0.1); a harness may not take it."""

ANY_HOST = "*"
"""In a host list: any host (the setup step `link`, which reaches a channel's own servers)."""

UPSTREAM_ENV = "LNK_UPSTREAM_{name}"
"""LNK_UPSTREAM_OPENAI=http://127.0.0.1:9999 sends the proxy's OpenAI traffic there (tests, stand-ins)."""
UPSTREAM_CA_ENV = "LNK_UPSTREAM_CA"
"""LNK_UPSTREAM_CA=/path/ca.pem: the only certificate authorities the proxy trusts for providers'
TLS, in place of the usual ones (tests: a throwaway CA for a stand-in at a provider's real name).
Read outside every sandbox, before the sandbox starts."""

if TYPE_CHECKING:
    Mode = Literal["harness", "tool", "setup", "health"]
MODES: tuple[Mode, ...] = ("harness", "tool", "setup", "health")


def __getattr__(name: str) -> object:
    """`Mode` for a program that reads it at run time (the models'), made from MODES then."""
    if name == "Mode":
        from typing import Literal

        return Literal[MODES]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def proxy_url(port: int = PROXY_PORT) -> str:
    """The proxy's address as the sandboxed program sees it (HTTP_PROXY)."""
    return f"http://127.0.0.1:{port}"


def tool_url(tool: str, port: int = PROXY_PORT) -> str:
    """The address a sandboxed harness calls a tool outside its sandbox at."""
    return f"{proxy_url(port)}{TOOLS_PATH}{tool}/mcp"
