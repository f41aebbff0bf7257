"""lnk-qmd: QMD as a Link memory engine, through the engine contract"""

__version__ = "0.1.0"
