"""``python -m benchmarks.validity``: see :mod:`benchmarks.validity.benchmark`."""

from benchmarks.validity.benchmark import main

if __name__ == "__main__":
    main()
