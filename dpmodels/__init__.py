"""dpmodels: optimization models for differential privacy."""
