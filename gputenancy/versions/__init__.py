"""What differs per Kueue and Kubernetes version, as data and its loaders."""
