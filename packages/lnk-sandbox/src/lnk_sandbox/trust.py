"""The certificate authorities the proxy trusts for providers.

certifi's (Mozilla's), as lnk's httpx clients trust, on every OS alike. `LNK_UPSTREAM_CA`, in
the environment of the process running `lnk-sandbox run` (outside every sandbox), names a PEM
file trusted in their place, for tests' stand-ins at a provider's real name. That file is read
once, before the sandbox starts, so nothing inside can change what is trusted, and a setting
that can't be read stops the run before it starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.sandbox_terms import UPSTREAM_CA_ENV

TYPE_CHECKING = False  # `typing` isn't loaded on a run's path (link_plugin.records)
if TYPE_CHECKING:
    import ssl


class Trust:
    def __init__(self, environ: Mapping[str, str]) -> None:
        path = environ.get(UPSTREAM_CA_ENV)
        self.authorities: str | None = None
        if path:
            try:
                self.authorities = Path(path).read_text()
            except (OSError, UnicodeDecodeError) as exc:
                raise LinkError(f"{UPSTREAM_CA_ENV} names {path}, which can't be read ({exc}).") from None
        self._context: ssl.SSLContext | None = None

    def context(self) -> ssl.SSLContext:
        """Made on first use (loading a CA bundle takes tens of milliseconds), then shared."""
        if self._context is None:
            import ssl

            import certifi

            if self.authorities is not None:
                self._context = ssl.create_default_context(cadata=self.authorities)
            else:
                self._context = ssl.create_default_context(cafile=certifi.where())
        return self._context
