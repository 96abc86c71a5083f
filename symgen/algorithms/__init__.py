"""symgen: algorithms."""
