"""Stand-ins shared by lnk's tests and its end-to-end suite (never released)."""

__version__ = "0.1.0"
