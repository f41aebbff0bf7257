from lnk_hermes.cli import main

main()
