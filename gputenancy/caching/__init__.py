"""The cache: every key and ingredient, the content-addressed store, and the Memo interface the engine uses."""
