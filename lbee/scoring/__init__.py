"""The model's side: confidence φ and performance ω from classifiers and segmenters, devices."""
