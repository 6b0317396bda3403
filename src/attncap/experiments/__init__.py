"""Experiment drivers: one module per claim, turning a config section into tidy result tables."""
