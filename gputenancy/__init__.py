"""GitOps policy pipeline for GPU tenancy on Kubernetes (Kueue + DRA)."""

__version__ = "0.1.0"
