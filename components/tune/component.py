"""KFP wrappers for :mod:`components.tune`: set-up, one worker per ``ParallelFor`` iteration, fan-in."""

from typing import List, NamedTuple  # noqa: UP035 - KFP's signature parser needs typing.List

from kfp import dsl
from kfp.dsl import Artifact, Dataset, Input, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def create_tuning_study(
    train: dict,
    tune: dict,
    tune_trials: int,
    tracking: dict,
    pipeline_run_id: str,
    plan: Output[Artifact],
) -> List[int]:  # noqa: UP006
    """Validates the search space and storage, creates or resumes the study; returns the worker indices.

    ``train`` (the ``train`` section) is the base every trial starts from (the space varies some
    of it); ``tune`` is the ``tune`` section (:class:`~components.tune.config.TuneSettings`) and
    ``tune_trials`` its per-run setting ``tune.trials``. The single return value (not a named
    output) is what ParallelFor loops over: kfp.local cannot loop over a named output.
    """
    from pathlib import Path

    from components.tune.config import TuneSettings
    from components.tune.study import resolve_storage
    from components.tune.study_workers import prepare_study
    from mlops.settings import from_section
    from mlops.tracking.store import TrackingStore
    from training.config import TrainConfig

    settings = from_section(TuneSettings, tune, trials=tune_trials)
    store = TrackingStore.for_task(tracking, pipeline_run_id)
    tuning_plan = prepare_study(
        settings=settings,
        base=from_section(TrainConfig, train),
        storage_url=resolve_storage(settings.study_storage, store.tracking_uri),
        tracking=store,
        space_file=settings.search_space_file,
        space_overrides=settings.search_space,
    )
    tuning_plan.save(Path(plan.path))
    plan.metadata.update(
        {
            "study_name": settings.study_name,
            "trials_before": tuning_plan.trials_before,
            "parent_run_id": tuning_plan.parent_run_id,
        }
    )
    return list(range(tuning_plan.worker_count))


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def run_tuning_worker(
    dataset: Input[Dataset],
    plan: Input[Artifact],
    worker_index: int,
    tracking: dict,
    pipeline_run_id: str,
) -> int:
    """Runs this worker's share of trials against the shared study; returns how many it ran."""
    from pathlib import Path

    from components.tune.study import TuningPlan
    from components.tune.study_workers import run_worker
    from mlops.data.dataset import load_table, schema_from_metadata
    from mlops.tracking.store import TrackingStore

    frame, _ = load_table(dataset.path)
    summary = run_worker(
        plan=TuningPlan.load(Path(plan.path)),
        worker_index=int(worker_index),  # a ParallelFor item may arrive as a float under kfp.local
        frame=frame,
        schema=schema_from_metadata(dataset.metadata, "the tuning worker's dataset"),
        tracking=TrackingStore.for_task(tracking, pipeline_run_id),
    )
    return summary.trials


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def select_best_trial(
    plan: Input[Artifact],
    trials_run: List[int],  # noqa: UP006
    tracking: dict,
    pipeline_run_id: str,
) -> NamedTuple(  # type: ignore[valid-type]
    "BestTrial", [("train_config", dict), ("best_val_auc", float), ("best_trial", int)]
):
    """Picks the study's best trial, logs it and the plots to the parent run; outputs its training settings."""
    from collections import namedtuple
    from pathlib import Path

    from components.tune.best import select_best
    from components.tune.study import TuningPlan
    from mlops.settings import section_values
    from mlops.tracking.store import TrackingStore

    best = select_best(TuningPlan.load(Path(plan.path)), TrackingStore.for_task(tracking, pipeline_run_id))
    print(f"{int(sum(trials_run))} trials this run; best trial {best.number}: val AUC {best.value:.4f}")
    BestTrial = namedtuple("BestTrial", ["train_config", "best_val_auc", "best_trial"])
    return BestTrial(section_values(best.config), best.value, best.number)


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def fixed_train_config(train: dict) -> NamedTuple("FixedTrainConfig", [("train_config", dict)]):  # type: ignore[valid-type]
    """Checks and passes the pipeline's own ``train`` section on when tuning is off (the dsl.Else branch).

    With it, ``train_model`` takes ``dsl.OneOf`` of two parameter outputs; a OneOf of the two
    branches' artifacts (two ``train_model`` tasks) would not run under kfp.local.
    """
    from collections import namedtuple

    from mlops.settings import from_section, section_values
    from training.config import TrainConfig

    FixedTrainConfig = namedtuple("FixedTrainConfig", ["train_config"])
    return FixedTrainConfig(section_values(from_section(TrainConfig, train)))
