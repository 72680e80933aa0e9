"""``python -m benchmarks.real_model``: see :mod:`benchmarks.real_model.benchmark`."""

from benchmarks.real_model.benchmark import main

if __name__ == "__main__":
    main()
