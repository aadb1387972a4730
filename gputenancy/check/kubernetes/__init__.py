"""As strict as the Kubernetes API server: CRD schemas and CEL, built-in kinds, names and metadata, DRA objects."""
