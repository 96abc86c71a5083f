"""symgen: pipeline."""
