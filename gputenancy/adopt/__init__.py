"""Adopting a cluster that already runs Kueue: its live objects -> tenant, platform and overlay files,
and the proof that rendering those files gives back the live objects."""
