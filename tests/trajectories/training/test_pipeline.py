"""The recipe as a pipeline (stages chained, resumed, empty stages passed through) and the day watcher.

The whole five-stage recipe runs end to end in ``test_recipe.py``; here the pipeline's own rules are
checked with the cheapest stages, and the watcher's with a real store and real exports.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import yaml

from shoppingbench.sample_world import SampleWorld
from shoppingbench.settings import HarnessSettings
from tests.sandbox_support import UID_BASE
from trajectories.doubles.synthetic import synthetic_day
from trajectories.dumps import ExportOptions, SplitRule
from trajectories.store import TrajectoryStore
from trajectories.training.evaluation.outcome import EvaluationOutcome
from trajectories.training.pipeline import (
    PipelineConfig,
    chain_stage,
    day_dumps,
    load_stage_config,
    run_pipeline,
    with_catalog,
    with_teacher_endpoint,
)
from trajectories.training.stages.dpo import DPOStageConfig
from trajectories.training.stages.grpo_config import GRPOStageConfig
from trajectories.training.stages.outcome import StageOutcome
from trajectories.training.stages.sampling_config import SamplingStageConfig
from trajectories.training.stages.stage import NothingToTrain
from trajectories.training.watch import STATE_FILE, Watcher, WatchState, export_new_days

CONFIGS = Path(__file__).parents[3] / "trajectories" / "training" / "configs"


def _write_pipeline(directory: Path, stages: list[str], **extra: object) -> Path:
    """A pipeline file next to copies of the shipped tiny stage configs, with ``model`` set where given."""
    directory.mkdir(parents=True, exist_ok=True)
    names = []
    for number, stage in enumerate(stages):
        name, _, model = stage.partition("@")
        raw = yaml.safe_load((CONFIGS / name).read_text(encoding="utf-8"))
        if model:
            raw["model"] = model
        target = directory / f"{number}-{name}"
        target.write_text(yaml.safe_dump(raw), encoding="utf-8")
        names.append(target.name)
    path = directory / "pipeline.yaml"
    path.write_text(yaml.safe_dump({"stages": names, **extra}), encoding="utf-8")
    return path


def test_every_shipped_stage_config_loads_into_its_class() -> None:
    for path in sorted(CONFIGS.glob("*.yaml")):
        if path.name.startswith("pipeline"):
            pipeline = PipelineConfig.load(path)
            assert all(stage.exists() for stage in pipeline.stages), path
            continue
        config = load_stage_config(path)
        assert config.stage == path.stem.split("_")[0], path  # grpo_study_tiny.yaml, teacher_vllm.yaml...
    with pytest.raises(ValueError, match="stage"):
        load_stage_config(CONFIGS / "accelerate" / "multi_gpu.yaml")


def test_catalog_and_teacher_overrides_reach_the_stages_that_have_them(tmp_path: Path) -> None:
    teacher = load_stage_config(CONFIGS / "teacher_tiny.yaml")
    assert isinstance(teacher, SamplingStageConfig)
    moved = with_teacher_endpoint(with_catalog(teacher, tmp_path), "http://127.0.0.1:9/v1", "scripted")
    assert isinstance(moved, SamplingStageConfig) and moved.rollouts.catalog == tmp_path
    assert moved.rollouts.serving.base_url == "http://127.0.0.1:9/v1"
    assert moved.rollouts.serving.model_name == "scripted" and moved.rollouts.serving.api_key_env is None
    sft = load_stage_config(CONFIGS / "sft_tiny.yaml")
    assert with_teacher_endpoint(with_catalog(sft, tmp_path), "http://x/v1", "m") == sft


def test_later_stages_get_the_previous_model_and_what_earlier_stages_produced(tmp_path: Path) -> None:
    produced = {"rejection": tmp_path / "rej.jsonl", "teacher": tmp_path / "teacher.jsonl"}
    dpo = chain_stage(load_stage_config(CONFIGS / "dpo_tiny.yaml"), tmp_path / "final", produced)
    grpo = chain_stage(load_stage_config(CONFIGS / "grpo_tiny.yaml"), tmp_path / "final", produced)
    sft = chain_stage(load_stage_config(CONFIGS / "sft_tiny.yaml"), None, produced)
    assert dpo.model == grpo.model == str(tmp_path / "final") and sft.model == "tiny"
    assert isinstance(dpo, DPOStageConfig) and dpo.rollouts == [produced["rejection"]]
    assert isinstance(grpo, GRPOStageConfig) and grpo.teacher_attempts == [produced["teacher"]]


def test_stages_chain_resume_and_pass_an_empty_stage_through(
        tiny_model_dir: Path, world_dump: Path, small_world: SampleWorld, tmp_path: Path) -> None:
    """sft -> rejection (a random model solves nothing: skipped, its model passes on) -> sft."""
    path = _write_pipeline(tmp_path / "recipe", [f"sft_tiny.yaml@{tiny_model_dir}", "rejection_tiny.yaml",
                                                 "sft_tiny.yaml"], catalog=str(small_world.catalog_dir))
    pipeline = PipelineConfig.load(path)
    settings = HarnessSettings(home=tmp_path / "home", sandbox_uid_base=UID_BASE, sandbox_timeout_s=90,
                               inference_attempt_calls=2)
    evaluated: list[tuple[Path, str]] = []

    def evaluate(model: Path, stage: str, out: Path) -> EvaluationOutcome:
        evaluated.append((model, stage))
        return EvaluationOutcome(problems_source=str(model), registry_id=len(evaluated))

    out = tmp_path / "run"
    first, rejection, second = run_pipeline(pipeline, [world_dump], out, settings=settings, evaluate=evaluate)
    assert first.final == out / "01-sft" / "final" and first.global_step == 4
    assert first.tokens_trained and first.minutes is not None and first.examples
    assert rejection.skipped and "nothing to fine-tune on" in rejection.skipped
    assert rejection.final == first.final
    assert rejection.attempts_file == out / "02-rejection" / "rollouts" / "attempts.jsonl"
    rolled = load_stage_config(out.parent / "recipe" / "1-rejection_tiny.yaml")
    assert rolled.model == "tiny"  # the file is untouched: the pipeline chained a copy
    assert second.final == out / "03-sft" / "final"
    assert (out / "03-sft" / "base").exists() is False  # started from stage 1's model, not a fresh tiny one
    assert evaluated == [(out / "03-sft" / "final", "sft")]
    assert second.evaluation == EvaluationOutcome(problems_source=str(second.final), registry_id=1)
    written = json.loads((out / "pipeline.json").read_text(encoding="utf-8"))
    assert written[2]["final"] == str(second.final) and written[1]["skipped"] == rejection.skipped
    assert written[0]["dropped"] == first.details["dropped"]  # a stage's own counts stay top-level keys
    assert [StageOutcome.model_validate(entry) for entry in written] == [first, rejection, second]

    again = run_pipeline(pipeline, [world_dump], out, settings=settings, evaluate=evaluate)
    assert again == [first, rejection, second]  # read back from each result.json and evaluation.json
    assert len(evaluated) == 1  # nothing retrained (every stage had its result.json) nor re-evaluated

    strict = pipeline.model_copy(update={"skip_empty_stages": False})
    with pytest.raises(NothingToTrain):
        run_pipeline(strict, [world_dump], tmp_path / "strict", settings=settings)


def _store_with_days(path: Path, days: list[date]) -> TrajectoryStore:
    store = TrajectoryStore.open(f"sqlite:///{path}")
    for number, day in enumerate(days):
        start = datetime.combine(day, datetime.min.time(), tzinfo=UTC).timestamp()
        synthetic = synthetic_day(day_start=start, problems=6, agents=1, seed=number, styles=("react",))
        store.register_problems(synthetic.problems)
        for agent in synthetic.agents:
            store.register_agent(agent.entry)
        store.write_attempts(synthetic.attempts(6))
    return store


def test_the_watcher_exports_finished_days_and_trains_once_per_new_day(tmp_path: Path) -> None:
    days = [date(2026, 11, 19), date(2026, 11, 20), date(2026, 11, 22)]
    store = _store_with_days(tmp_path / "store.sqlite3", days)
    trained: list[tuple[list[str], Path]] = []
    today = [date(2026, 11, 21)]

    def train(dumps: list[Path], target: Path) -> None:
        trained.append(([d.name for d in dumps], target))

    options = ExportOptions(jsonl=False, split_rule=SplitRule(held_out_fraction=0.0))
    watcher = Watcher(dumps_root=tmp_path / "dumps", out=tmp_path / "out", train=train, window_days=2,
                      store=store, since=date(2026, 11, 18), export_options=options, today=lambda: today[0])
    assert watcher.poll() == "2026-11-20"  # 19 and 20 are finished; 18 has no attempts; 21 is today
    assert [d.name for d in day_dumps(tmp_path / "dumps")] == ["2026-11-19", "2026-11-20"]
    assert trained == [(["2026-11-19", "2026-11-20"], tmp_path / "out" / "2026-11-20")]
    assert watcher.poll() is None and len(trained) == 1  # nothing new
    today[0] = date(2026, 11, 23)
    assert watcher.poll() == "2026-11-22"
    assert trained[-1][0] == ["2026-11-20", "2026-11-22"]  # the window: two days up to the new one
    state = WatchState.read(tmp_path / "out")
    assert set(state.trained) == {"2026-11-20", "2026-11-22"}
    assert json.loads((tmp_path / "out" / STATE_FILE).read_text(encoding="utf-8"))["trained"]
    # A restarted watcher reads the state and does not train the same day again
    restarted = Watcher(dumps_root=tmp_path / "dumps", out=tmp_path / "out", train=train, store=store,
                        since=date(2026, 11, 18), export_options=options, today=lambda: today[0])
    assert restarted.poll() is None and len(trained) == 2
    assert export_new_days(store, tmp_path / "dumps", since=date(2026, 11, 18), today=date(2026, 11, 23),
                           options=options) == []  # every finished day is dumped already
    store.close()


def test_a_day_with_nothing_to_train_on_is_recorded_and_not_retried(tmp_path: Path) -> None:
    store = _store_with_days(tmp_path / "store.sqlite3", [date(2026, 11, 20)])
    calls: list[str] = []

    def train(dumps: list[Path], target: Path) -> None:
        calls.append(target.name)
        raise NothingToTrain("no successful attempt")

    watcher = Watcher(dumps_root=tmp_path / "dumps", out=tmp_path / "out", train=train, store=store,
                      since=date(2026, 11, 20), today=lambda: date(2026, 11, 21))
    assert watcher.poll() is None and watcher.poll() is None
    assert calls == ["2026-11-20"]
    assert WatchState.read(tmp_path / "out").skipped == {"2026-11-20": "no successful attempt"}
    store.close()


@pytest.mark.parametrize(("name", "kind", "zero_stage"), [
    ("multi_gpu", "MULTI_GPU", None), ("deepspeed_zero2", "DEEPSPEED", 2),
    ("deepspeed_zero3", "DEEPSPEED", 3)])
def test_the_multi_gpu_launch_configs_are_what_accelerate_reads(name: str, kind: str,
                                                                zero_stage: int | None) -> None:
    """No GPU here to launch them on: accelerate's own loader must at least read them as intended."""
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(str(CONFIGS / "accelerate" / f"{name}.yaml"))
    assert config.distributed_type.name == kind and config.num_machines == 1
    assert config.mixed_precision == "bf16" and not config.use_cpu
    assert config.deepspeed_config.get("zero_stage") == zero_stage
