"""link-release: Link's release, built, signed and laid out as an index that lnk and pip read."""
