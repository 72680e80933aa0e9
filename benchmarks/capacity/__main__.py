"""``python -m benchmarks.capacity``: see :mod:`benchmarks.capacity.benchmark`."""

from benchmarks.capacity.benchmark import main

if __name__ == "__main__":
    main()
