"""lnk-telegram: connect a Telegram bot to an agent, pair its owner, and carry its messages."""

__version__ = "0.1.0"
