"""Where the endpoint listens and what it answers on, for the adapter and the server alike."""

DEFAULT_PORT = 18800
"""The port the agent `main` keeps for the endpoint."""
PORT_COUNT = 1
"""The endpoint is its only port: Link adds one to every block (the proxy's on a Mac, lnk's gateway
without a sandbox), so an agent on Link Harness holds two."""
HOST = "127.0.0.1"
HEALTH_PATH = "/_link/health"


def base_url(port: int) -> str:
    return f"http://{HOST}:{port}/v1"
