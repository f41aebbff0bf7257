"""TLS to the model: verified as httpx verifies, its authorities read at the first handshake.

httpx makes its TLS context when its client is made, reading the ~150 authorities certifi holds:
about 1 MiB and, on a loaded machine, a few hundred milliseconds of every start, even for a harness
whose model is on plain HTTP, as it is behind Link's proxy (which speaks TLS to the provider), that
is, unless the owner turned the agent's wired keys off.

`DeferredTrust` is the context httpx would make, verifying from its first moment (certificates
required, host names checked), whose authorities are read the first time it wraps a connection:
httpx's own choice of them (`SSL_CERT_FILE`, else `SSL_CERT_DIR`, else certifi's bundle), once,
under a lock, since a handshake may start in a worker thread. Nothing connects before it has them,
so no connection is ever made with fewer.
"""

from __future__ import annotations

import os
import ssl
import sys
import threading
from typing import Any


class DeferredTrust(ssl.SSLContext):
    """A client TLS context that reads its trusted authorities just before its first handshake."""

    def __new__(cls) -> DeferredTrust:
        return super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)

    def __init__(self) -> None:
        # PROTOCOL_TLS_CLIENT requires a certificate and checks the host name; said again here so
        # this context never depends on a default.
        self.verify_mode = ssl.CERT_REQUIRED
        self.check_hostname = True
        keylog = os.environ.get("SSLKEYLOGFILE")
        if keylog and not sys.flags.ignore_environment:  # as ssl.create_default_context does
            self.keylog_filename = keylog
        self._trusted = False
        self._trusting = threading.Lock()

    def trust(self) -> None:
        """Read the authorities httpx would trust (honouring the environment, as httpx does), once."""
        with self._trusting:
            if self._trusted:
                return
            if os.environ.get("SSL_CERT_FILE"):
                self.load_verify_locations(cafile=os.environ["SSL_CERT_FILE"])
            elif os.environ.get("SSL_CERT_DIR"):
                self.load_verify_locations(capath=os.environ["SSL_CERT_DIR"])
            else:
                import certifi

                self.load_verify_locations(cafile=certifi.where())
            self._trusted = True

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self.trust()
        return super().wrap_bio(*args, **kwargs)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self.trust()
        return super().wrap_socket(*args, **kwargs)
