"""Benchmarks of the pipeline on synthetic fleets: `bench.fleet` writes a fleet, `bench.run` times it."""
