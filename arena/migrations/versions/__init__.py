"""Schema revisions of the arena database, oldest first: ``0001`` the tables as ``create_all`` made them,
``0002`` the exposure ledger's problems and clusters."""
