"""The real-model benchmark's plan from the flags, the paired bootstrap of the lift, and a --model without a
checkpoint refused (the run itself: tests/benchmarks/test_real_model_run.py)."""

from __future__ import annotations

import orjson
import pytest

from benchmarks.real_model.benchmark import CPU_DEFAULTS, main, paired_lift


def test_the_paired_interval_brackets_the_lift_and_pairs_the_problems() -> None:
    base = [0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0] * 5
    better = [1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0] * 5
    lift = paired_lift(base, better, resamples=2000)
    assert lift["lift"] == pytest.approx(0.375)
    assert 0 < lift["low"] < lift["lift"] < lift["high"] <= 1
    same = paired_lift(base, base, resamples=500)
    assert same == {"lift": 0.0, "low": 0.0, "high": 0.0}  # paired: no problem-to-problem noise
    with pytest.raises(ValueError, match="same"):
        paired_lift(base, better[:-1])


def test_the_plan_takes_the_device_defaults_and_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--model", "/m", "--dry-run"])
    cpu = orjson.loads(capsys.readouterr().out.strip().splitlines()[-1])["plan"]
    assert cpu["held_out_problems"] == 3 * CPU_DEFAULTS["held_out_per_category"] and cpu["k"] == 1
    assert cpu["stages"] == ["sft"] and cpu["lora"]
    assert cpu["temperature"] == 0.0  # one sample a problem: the greedy one, as the agent asks for
    assert {name: cpu[name] for name in CPU_DEFAULTS} == CPU_DEFAULTS
    main(["--model", "/m", "--device", "cuda", "-k", "4", "--full", "--stages", "sft,dpo", "--dry-run"])
    gpu = orjson.loads(capsys.readouterr().out.strip().splitlines()[-1])["plan"]
    assert gpu["held_out_problems"] == 75 and gpu["k"] == 4 and not gpu["lora"]
    assert gpu["attempt_calls"] is None and gpu["attempt_timeout_s"] is None  # the validator's own
    assert gpu["stages"] == ["sft", "dpo"] and gpu["temperature"] == 1.0  # k samples must differ
    main(["--model", "/m", "--temperature", "0.7", "--dry-run"])
    assert orjson.loads(capsys.readouterr().out.strip().splitlines()[-1])["plan"]["temperature"] == 0.7
    with pytest.raises(SystemExit):
        main(["--model", "/m", "--stages", "grpo", "--dry-run"])
    with pytest.raises(SystemExit) as stopped:
        main(["--model", "/m"])
    assert stopped.value.code == 2
