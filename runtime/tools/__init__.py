"""Built-in tools (``handler: builtin:<name>``)."""
