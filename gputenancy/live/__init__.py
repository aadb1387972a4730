"""status: a cluster as it runs against Git. The objects Argo CD would change, the Kueue manager's
Configuration and restart marker, the devices the DRA drivers publish against the declared capacity,
every team's usage against its budget, and whether a draining tenant's queues are empty."""
