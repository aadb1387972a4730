"""The built chain: the cross-object view of a cluster and the claim -> mapping -> ClusterQueue -> LocalQueue checks."""
