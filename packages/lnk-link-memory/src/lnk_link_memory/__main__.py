from lnk_link_memory.cli import main

main()
