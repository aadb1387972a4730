"""As strict as Kueue's validating webhooks: ClusterQueue, Cohort, ResourceFlavor and LocalQueue rules."""
