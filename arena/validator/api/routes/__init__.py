"""The API's routers, one module per resource, each reading the app's ``ArenaView`` (``ViewDep``)."""
