"""The battery's summary (``benchmarks.adversarial.summarize``): a skipped case is neither held nor not
held, and says why."""

from __future__ import annotations

from benchmarks.adversarial import summarize


def test_a_skipped_case_is_reported_as_skipped_with_its_reason() -> None:
    result = summarize({"tests/adversarial/test_sandbox_proc.py::test_a[namespace]": "held",
                        "tests/adversarial/test_sandbox_proc.py::test_a[docker]": "skipped",
                        "tests/adversarial/test_copy_farm.py::test_b": "not_held"},
                       {"tests/adversarial/test_sandbox_proc.py::test_a[docker]": "no docker engine"})
    assert (result["cases"], result["held"], result["not_held"], result["skipped"]) == (3, 1, 1, 1)
    proc = result["families"]["sandbox_proc"]
    assert proc["not_held"] == [] and proc["skipped"] == ["test_a[docker]: no docker engine"]
    assert result["families"]["copy_farm"]["not_held"] == ["test_b"]
