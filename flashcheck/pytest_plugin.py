"""flashcheck's pytest plugin (placeholder, replaced by its implementation)."""
