"""Files -> records: the hardened YAML reader, discovery, Tenant/Platform/Cluster records, quantities."""
