"""`python -m lnk_whatsapp`: the same as the `lnk-whatsapp` executable (the bridge starts its engine so)."""

from lnk_whatsapp.cli import main

main()
