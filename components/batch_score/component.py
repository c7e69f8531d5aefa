"""KFP wrappers for the batch scoring job: plan (:mod:`~components.batch_score.batch_plan`), one scorer per
shard (:mod:`~components.batch_score.batch_shard`), finish (:mod:`~components.batch_score.batch_finish`)."""

from typing import List  # noqa: UP035 - KFP's signature parser needs typing.List

from kfp import dsl
from kfp.dsl import Artifact, Input, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def plan_batch_scoring(
    score: dict,
    score_model: str,
    score_data_uri: str,
    score_output_uri: str,
    tracking: dict,
    pipeline_run_id: str,
    plan: Output[Artifact],
) -> List[int]:  # noqa: UP006
    """Resolves ``score.model`` (NAME@ALIAS) once, verifies the version, lists and checks the input; returns the
    shard indices a ``ParallelFor`` loops over (the single return value: kfp.local cannot loop over a named output).

    ``score`` is the ``score`` section; ``score_model``, ``score_data_uri`` and ``score_output_uri`` its
    per-run settings.
    """
    import tempfile
    from pathlib import Path

    from components.batch_score.batch_plan import plan_job
    from components.batch_score.config import ScoreSettings
    from mlops.settings import from_section
    from mlops.tracking.store import TrackingStore

    settings = from_section(
        ScoreSettings, score, model=score_model, data_uri=score_data_uri, output_uri=score_output_uri
    )
    store = TrackingStore.for_task(tracking, pipeline_run_id)
    job = plan_job(settings, store, Path(tempfile.mkdtemp(prefix="mlops-batch-model-")))
    job.save(Path(plan.path))
    plan.metadata.update({"model_name": job.model_name, "version": job.version, "files": len(job.files)})
    print(
        f"{job.model_name}@{job.alias} = version {job.version}; {len(job.files)} file(s) in {len(job.shards)} shard(s)"
    )
    return list(range(len(job.shards)))


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def score_batch_shard(plan: Input[Artifact], shard: int, tracking: dict, pipeline_run_id: str) -> str:
    """Scores one shard's files chunk by chunk (skipping chunks already written); returns its counts as JSON."""
    import tempfile
    from pathlib import Path

    from components.batch_score.batch_job import BatchPlan
    from components.batch_score.batch_shard import score_shard
    from mlops.progress import Progress, emit
    from mlops.tracking.store import TrackingStore

    job = BatchPlan.load(Path(plan.path))
    total = job.total_rows or 0
    result = score_shard(
        job,
        int(shard),  # a ParallelFor item may arrive as a float under kfp.local
        TrackingStore.for_task(tracking, pipeline_run_id),
        Path(tempfile.mkdtemp(prefix="mlops-batch-model-")),
        progress=lambda rows: emit(Progress(unit="row", total=total, advance=rows)),
    )
    print(
        f"shard {shard}: {result.rows_scored} row(s) scored, {result.rows_bad} bad, "
        f"{result.chunks_written} chunk(s) written, {result.chunks_skipped} skipped"
    )
    return result.to_json()


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def finish_batch_scoring(
    plan: Input[Artifact],
    shard_results: List[str],  # noqa: UP006
    tracking: dict,
    pipeline_run_id: str,
    summary: Output[Artifact],
) -> int:
    """Adds the shards' counts up, writes ``_job.json`` and the ``batch.scored`` audit record; returns rows scored."""
    import json
    from dataclasses import asdict
    from pathlib import Path

    from components.batch_score.batch_finish import finish_job
    from components.batch_score.batch_job import BatchPlan, ShardResult
    from mlops.tracking.store import TrackingStore

    store = TrackingStore.for_task(tracking, pipeline_run_id)
    job = BatchPlan.load(Path(plan.path))
    done = finish_job(
        job,
        [ShardResult.from_json(text) for text in shard_results],
        tracking_uri=store.tracking_uri,
        links={"pipeline_run_id": pipeline_run_id} if pipeline_run_id else {},
    )
    Path(summary.path).write_text(json.dumps(asdict(done), indent=1))
    print(f"{done.rows_scored} row(s) scored, {done.rows_bad} bad, output {done.output_uri}")
    return done.rows_scored
