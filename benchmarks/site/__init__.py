"""The public site under load (``python -m benchmarks.site``): :mod:`.benchmark` serves and measures,
:mod:`.world` and :mod:`.build` make the synthetic month, :mod:`.load` sends the requests, :mod:`.plans`
explains every SELECT."""
