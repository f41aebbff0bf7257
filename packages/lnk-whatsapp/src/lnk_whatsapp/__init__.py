"""WhatsApp for lnk: link the agent as a device, answer its owner's number, carry messages to a harness."""

__version__ = "0.1.0"
