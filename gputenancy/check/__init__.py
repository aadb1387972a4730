"""As strict as the cluster: API schemas and CEL, Kueue webhook rules, DRA rules, the Configuration loader's rules, Kubernetes names."""
