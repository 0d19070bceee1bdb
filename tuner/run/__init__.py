"""The composition root: what a tune, a batch and a bench build and run."""
