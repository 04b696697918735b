"""Metric differential privacy: optimal perturbation LPs, partitioning and Benders decomposition."""
