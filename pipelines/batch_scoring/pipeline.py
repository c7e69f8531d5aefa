"""Batch scoring: plan (resolve NAME@ALIAS, verify the version, list the input) → shards in parallel → finish.

The same job ``mlops score`` runs in one process: the plan fixes the version every shard
scores with; each shard (a ``dsl.ParallelFor`` iteration, ``score.shards`` of them) scores
its share of the input files chunk by chunk, skipping chunks an earlier run already wrote;
the finish adds the counts up, writes ``_job.json`` and the ``batch.scored`` audit record.
"""

from __future__ import annotations

from typing import Any

from kfp import dsl

from components.batch_score.component import finish_batch_scoring, plan_batch_scoring, score_batch_shard
from components.batch_score.config import ScoreSettings
from mlops.tracking.context import TrackingSettings
from pipelines.signature import Parameters, PipelineForm

PIPELINE_NAME = "batch_scoring"
DEFAULTS = (ScoreSettings(), TrackingSettings(experiment=PIPELINE_NAME))
PER_RUN = ("score.model", "score.data_uri", "score.output_uri")
"""What changes per job: which model, which data, where to; the rest rides in the ``score`` section."""
DESCRIPTION = (
    "Score a file or a prefix of CSV/Parquet files with a registered model alias, in parallel shards."
)
FORM = PipelineForm(
    PIPELINE_NAME,
    DESCRIPTION,
    DEFAULTS,
    per_run=PER_RUN,
    returns=(int, "Rows scored."),
)


@FORM.pipeline
def batch_scoring_pipeline(parameters: Parameters) -> Any:
    tracking = parameters.tracking()
    plan = plan_batch_scoring(
        score=parameters.section("score"),
        score_model=parameters.per_run("score.model"),
        score_data_uri=parameters.per_run("score.data_uri"),
        score_output_uri=parameters.per_run("score.output_uri"),
        **tracking,
    )
    plan.set_caching_options(False)  # it resolves the alias now: never reuse an old answer
    with dsl.ParallelFor(plan.outputs["Output"], name="scoring-shards") as shard:
        scored = score_batch_shard(plan=plan.outputs["plan"], shard=shard, **tracking)
        scored.set_caching_options(False)  # resuming is the shard's own business (its manifests)
    finish = finish_batch_scoring(
        plan=plan.outputs["plan"], shard_results=dsl.Collected(scored.output), **tracking
    )
    finish.set_caching_options(False)
    return finish.outputs["Output"]
