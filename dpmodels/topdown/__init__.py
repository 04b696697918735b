"""Census TopDown (Abowd et al., 2019): hierarchical DP histograms consistent with public knowledge."""
