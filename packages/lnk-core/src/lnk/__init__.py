"""lnk: personal AI agents on your own machine."""

__version__ = "0.1.0"
