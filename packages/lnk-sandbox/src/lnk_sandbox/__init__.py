"""The sandbox for lnk agents: bubblewrap (Linux) and Seatbelt (macOS) policies, the proxy, grants and needs."""

__version__ = "0.1.0"
