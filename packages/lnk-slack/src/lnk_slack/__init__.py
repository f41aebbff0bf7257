"""Slack for lnk: connect an app in Socket Mode, pair its owner, carry messages to a harness."""

__version__ = "0.1.0"
