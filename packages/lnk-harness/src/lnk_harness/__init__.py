"""Link Harness: the default harness, a router for chat completions, tools and turns."""

__version__ = "0.1.0"
