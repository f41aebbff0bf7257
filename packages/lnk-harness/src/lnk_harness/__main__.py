"""`python -m lnk_harness`: the same as the `lnk-harness` executable."""

from lnk_harness.cli import main

main()
