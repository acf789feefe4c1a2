"""Analyses built on the core: per-class runs, sensitivity sweeps, Domino's settings."""
