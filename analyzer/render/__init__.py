"""Renderers take a Diagnosis only; they never look at the bundle."""
