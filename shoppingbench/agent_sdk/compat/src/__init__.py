"""The reference arena's ``src`` package path, so agents written for it import unchanged."""
