from lnk_qmd.cli import main

main()
