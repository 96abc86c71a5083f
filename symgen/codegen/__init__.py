"""symgen: code generation."""
