from lnk.cli import main

main()
