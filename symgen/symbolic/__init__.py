"""symgen: sympy spatial algebra."""
