from link_release.cli import main

main()
