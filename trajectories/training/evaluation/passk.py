"""The unbiased pass@k estimator (Chen et al., 2021, "Evaluating Large Language Models Trained on Code")."""

from __future__ import annotations

from math import comb


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of ``k`` samples drawn without replacement from ``n`` attempts, ``c``
    of them successful, succeeds: ``1 - C(n - c, k) / C(n, k)``.

    Exact integer arithmetic, so it stays unbiased and exact for any ``n`` (the usual product form
    loses precision; the binomials here are Python integers).
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}: sample at least k attempts per problem")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)
