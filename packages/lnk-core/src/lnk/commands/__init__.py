"""The `lnk` command's groups, one module each."""
