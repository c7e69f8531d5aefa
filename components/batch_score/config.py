"""Settings of a batch scoring job: the ``score`` section (which model, which data, where to, how)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field, model_validator

from mlops.settings import SETTINGS_CONFIG

MODEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*@[A-Za-z0-9_-]+$"
SCORE_COLUMN = "score"
PREDICTED_CLASS_COLUMN = "predicted_class"
"""The class the score decides at ``threshold`` (not a true label: the input's own label column may pass through)."""
ROW_COLUMN = "row"
REASONS_COLUMN = "reasons"
"""With ``score.explain``: each row's reasons, one JSON text per row (a list of ``feature``, ``value``,
``contribution``, ``text`` objects, largest |contribution| first; what the server's ``:explain`` answers)."""
OUTPUT_COLUMNS = (SCORE_COLUMN, PREDICTED_CLASS_COLUMN)

SKIP_ROWS = "skip_rows"
REFUSE = "refuse"


class ScoreSettings(BaseModel):
    """One batch scoring job: a registered model by alias over a file or a prefix of files."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "score"

    model: str = Field(default="credit-default@champion", pattern=MODEL_PATTERN)
    """Registered model and alias, NAME@ALIAS; the alias is resolved once, when the job starts."""
    data_uri: str = Field(default="")
    """Input: one CSV/Parquet file, a local directory or an s3:// prefix of them (subfolders are partitions)."""
    output_uri: str = Field(default="")
    """Output directory or s3:// prefix; the scores mirror the input's partitions under it."""
    chunk_rows: int = Field(default=100_000, ge=1, le=10_000_000)
    """Rows read, scored and written at a time; memory is bounded by this, not by the input's size."""
    on_bad_rows: Literal["refuse", "skip_rows"] = Field(default="refuse")
    """A row the model cannot take (text in a numeric feature, a number beyond FP32): refuse (stop the job,
    naming the rows; nothing is recorded as done) or skip_rows (report them under _bad_rows/ and score the rest)."""
    id_column: str = Field(default="")
    """Input column copied beside each score to identify its row. Empty: `row`, the row's number in its file
    (0-based, header not counted)."""
    pass_through_columns: tuple[str, ...] = Field(default=())
    """Input columns copied unchanged into the output (e.g. a customer id, a date); every other non-feature
    column (label, protected attributes, identifiers) is dropped."""
    missing_values: tuple[str, ...] = Field(default=())
    """Cell values read as missing in feature columns, e.g. '?' (blank cells and nulls always are)."""
    threshold: float = Field(default=0.5, ge=0, le=1)
    """The predicted_class column says the positive class when the score is at least this, else the negative class."""
    request_log: bool = Field(default=True)
    """Also write the scored rows in the request-log format, so `mlops monitor` checks the batch for drift."""
    request_log_uri: str = Field(default="")
    """Request-log root the batch is logged under (<root>/<model>/requests-*.parquet). Empty: <output_uri>/_request_log."""
    shards: int = Field(default=1, ge=1, le=256)
    """Parallel scoring tasks of the pipeline (a dsl.ParallelFor); each takes a share of the input files."""
    compression: Literal["snappy", "zstd", "none"] = Field(default="snappy")
    """Parquet compression of the output files."""
    intra_op_threads: int = Field(default=1, ge=1, le=64)
    """ONNX Runtime threads per scoring process."""
    explain: bool = Field(default=False)
    """Add each row's reasons (column `reasons`, JSON) measured against the version's stored reference rows; costs 1 + features x reference rows scores per row, and a version registered without reference rows is refused."""
    explain_top_k: int = Field(default=3, ge=1, le=64)
    """Reasons per row with explain, largest |contribution| first."""

    @model_validator(mode="after")
    def _columns_distinct(self) -> ScoreSettings:
        taken = [*OUTPUT_COLUMNS, self.id_column or ROW_COLUMN, *([REASONS_COLUMN] if self.explain else [])]
        clash = [c for c in self.pass_through_columns if c in taken]
        if clash:
            raise ValueError(
                f"pass_through_columns {clash} collide with the output's own columns {taken}; "
                "rename them in the data or leave them out"
            )
        if self.id_column in OUTPUT_COLUMNS or (self.explain and self.id_column == REASONS_COLUMN):
            raise ValueError(
                f"id_column {self.id_column!r} collides with the output columns {list(OUTPUT_COLUMNS)}"
            )
        if len(set(self.pass_through_columns)) != len(self.pass_through_columns):
            raise ValueError(f"pass_through_columns {list(self.pass_through_columns)} names a column twice")
        return self

    @property
    def model_name(self) -> str:
        return self.model.split("@", 1)[0]

    @property
    def alias(self) -> str:
        return self.model.split("@", 1)[1]

    @property
    def id_name(self) -> str:
        """The output's id column: ``id_column``, or ``row``."""
        return self.id_column or ROW_COLUMN

    def log_root(self) -> str:
        """Where the batch's request log goes."""
        return self.request_log_uri or f"{self.output_uri.rstrip('/')}/_request_log"
