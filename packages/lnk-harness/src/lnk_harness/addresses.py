"""Where the endpoint listens and what it answers on, for the adapter and the server alike."""

DEFAULT_PORT = 18800
"""The first port the agent `main` keeps (the second is its proxy's, on a Mac)."""
PORT_COUNT = 2
HOST = "127.0.0.1"
HEALTH_PATH = "/_link/health"


def base_url(port: int) -> str:
    return f"http://{HOST}:{port}/v1"
