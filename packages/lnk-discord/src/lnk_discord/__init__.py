"""Discord for lnk: connect a bot on the Gateway, pair its owner, carry messages to a harness."""

__version__ = "0.1.0"
