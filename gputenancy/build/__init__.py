"""kustomize in shards, and writing generated/ atomically."""
