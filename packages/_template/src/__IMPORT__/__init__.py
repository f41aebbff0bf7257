"""__DESCRIPTION__"""

__version__ = "0.1.0"
