"""lnk-openclaw: OpenClaw as a Link harness, through the harness contract"""

__version__ = "0.1.0"
