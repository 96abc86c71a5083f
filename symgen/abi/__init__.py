"""symgen: the ABI."""
