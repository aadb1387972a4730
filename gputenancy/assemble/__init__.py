"""Assembling generated/: kustomize through proc (shards) and writing the tree atomically."""
