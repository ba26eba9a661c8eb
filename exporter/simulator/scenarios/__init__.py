"""Built-in scenario files (data, loaded with importlib.resources)."""
