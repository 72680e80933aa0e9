"""Schema revisions, oldest first: ``0001`` the attempt record, ``0002`` judge verdicts and filter labels."""
