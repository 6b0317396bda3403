"""Synthetic data generators, one module per claim; all seeded, none downloads anything."""
