"""What the public site's pages and JSON API share: the Jinja2 environment and ``page()`` render helper
(``pages.py``), pagination and cache headers (``paging.py``) and server-side SVG charts (``charts.py``).

A folder of its own below ``routes/``: the routes import it, and ``app.py`` (which imports the routes)
mounts the stylesheet from ``static/`` (``pages.STATIC_DIR``). Pages are templates in ``templates/``
extending ``base.html``; nothing here fetches anything from outside the validator.
"""
