"""Named rules over the records."""
