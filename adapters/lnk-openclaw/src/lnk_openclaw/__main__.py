from lnk_openclaw.cli import main

main()
