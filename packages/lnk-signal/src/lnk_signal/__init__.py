"""Signal for lnk: link signal-cli as a device, answer the owner's number, carry messages to a harness."""

__version__ = "0.1.0"
