"""symgen: the IR."""
