"""What the model-validation gate found: every check's results and the decisions drawn from them.

Its own module so that the reports (``gate_report.py``) and the gate (``validation_gate.py``) both
read it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from components.model_validation.behavioural import BehaviouralResult
from components.model_validation.checks import Violation
from components.model_validation.config import ValidationConfig
from components.model_validation.explainability import ExplainabilityResult
from components.model_validation.fairness import AttributeFairness
from components.model_validation.score_summary import ScoreSummary
from mlops.gates import Decision

GATE = "model_validation"
CHECKS = ("fairness", "behavioural", "explainability")


@dataclass(frozen=True)
class ModelValidationResult:
    label: str
    protected_attributes: tuple[str, ...]
    n_rows: int
    """Test rows scored for fairness."""
    config: ValidationConfig
    fairness: tuple[AttributeFairness, ...]
    explainability: ExplainabilityResult
    behavioural: tuple[BehaviouralResult, ...]
    favourable_prediction: int = 0
    """The predicted label (0/1) the fairness figures count as favourable (resolved from the schema and policy)."""
    decisions: dict[str, Decision] = field(default_factory=dict)
    """Per family of checks (``fairness``, ``behavioural``, ``explainability``) and overall (``model_validation``)."""
    scores: ScoreSummary | None = None
    """Calibration and score distributions of the test rows (charted in the report and the card)."""

    @property
    def decision(self) -> Decision:
        return self.decisions[GATE]

    @property
    def violations(self) -> tuple[Violation, ...]:
        found = [v for a in self.fairness for v in a.violations]
        found += [v for b in self.behavioural for v in b.violations]
        return (*found, *self.explainability.violations)
