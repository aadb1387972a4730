"""admit: a workload -> what Kueue charges, on which queue and flavor, and the verdict."""
