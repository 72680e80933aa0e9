"""``python -m benchmarks.site``: see :mod:`benchmarks.site.benchmark`."""

from benchmarks.site.benchmark import main

if __name__ == "__main__":
    main()
