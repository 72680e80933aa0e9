"""Grading an attempt: the production ``Grader`` turns an agent's dialogue and proxy log into an
``AttemptRecord`` with its score, applying the verified-answer rule (only ids a tool returned count).
Above ``scoring`` (the pure rules) and ``records`` (the record types), which it joins."""
