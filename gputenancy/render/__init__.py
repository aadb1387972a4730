"""Records -> Kubernetes objects (jinja2), the merged Kueue Configuration."""
