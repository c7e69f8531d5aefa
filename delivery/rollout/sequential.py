"""Challenger against champion on *quality*, with an always-valid sequential test: testing by betting.

**Evidence.** Quality is compared through paired units, each a number in [0, 1] whose mean
is the figure compared:

- *realised ROC AUC*, as feedback labels arrive: each model's labelled requests are paired
  into disjoint (positive, negative) couples in arrival order; a couple scores 1 when the
  positive outranks the negative, ½ on a tie, else 0 — its mean is the model's AUC.
- *estimated accuracy* (label-free, CBPE), from the first request on: a request scores its
  calibrated probability of being classified right (``p`` at or above the threshold,
  ``1 - p`` below) — its mean is the model's expected accuracy.

The k-th unit of the challenger is paired with the k-th unit of the champion (their
requests come from the same traffic over the same time), and the test runs on the
differences ``D = challenger - champion`` in [-1, 1].

**Test.** Two one-sided tests by betting (Shafer 2021; Waudby-Smith & Ramdas 2024,
"Estimating means of bounded random variables by betting"), each at ``alpha / 2``:

- *harm*: H0 "the challenger is at least as good" (E[D] ≥ 0); wealth ``∏ (1 - λ_k D_k)``.
  Rejected → roll back.
- *non-inferiority*: H0 "the challenger is worse by ``margin`` or more" (E[D] ≤ -margin);
  wealth ``∏ (1 + λ_k (D_k + margin))``. Rejected → quality allows promotion.

Under its null each wealth is a non-negative supermartingale whatever the distribution of
the bounded differences, so by Ville's inequality it *ever* reaches ``2 / alpha`` with
probability at most ``alpha / 2``: the error bound holds at every request, under any
stopping rule and however often the analysis looks — an always-valid test, the same
guarantee as a confidence sequence (inverting the tests gives one). The bet ``λ_k`` is
predictable (it uses units before ``k`` only) and follows aGRAPA, the growth-rate adaptive
bet: ``mean / (variance + mean²)`` of the past units, clipped to ``[0, ½ / bound]`` so a
single unit never costs more than half the wealth.

**Why betting and not mSPRT.** mSPRT (Johari et al. 2017, Optimizely / Eppo) mixes a
Gaussian likelihood ratio, so its guarantee needs normal increments with a known variance:
for 0/1 units in the first few hundred requests — exactly when a canary is small — it is
only approximate, and an approximation there is how a canary rolls back a good model at low
traffic. Betting needs boundedness only, which the units have by construction, and the
adaptive bet makes it about as fast as a test that knew the variance. Too little traffic
is then never a decision: the wealth cannot reach ``2 / alpha`` on few units (``min_units``
adds a floor on top).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

QualityOutcome = Literal["rollback", "promote", "continue"]
MAX_QUEUE = 100_000
"""Units (or labelled rows of one class) held waiting for a partner; older ones are dropped first."""
PRIOR_VARIANCE = 0.25
"""The bet's variance before any unit (the largest a [0, 1] unit can have, halved for a difference's scale)."""


@dataclass
class BettingTest:
    """One one-sided test by betting that E[Z] ≤ 0, for Z in ``[low, high]`` (low < 0 < high), streamed."""

    low: float
    high: float
    log_wealth: float = 0.0
    units: int = 0
    total: float = 0.0
    squares: float = 0.0

    def update(self, z: np.ndarray) -> None:
        """Bet on each of ``z`` in turn (vectorised: each bet uses only the units before it)."""
        if len(z) == 0:
            return
        counts = self.units + np.arange(len(z))
        sums = self.total + np.concatenate([[0.0], np.cumsum(z)[:-1]])
        squares = self.squares + np.concatenate([[0.0], np.cumsum(z * z)[:-1]])
        mean = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
        variance = (PRIOR_VARIANCE + np.maximum(squares - counts * mean * mean, 0.0)) / (counts + 1)
        bet = np.clip(mean / (variance + mean * mean), 0.0, 0.5 / -self.low)
        self.log_wealth += float(np.sum(np.log1p(bet * z)))
        self.units += len(z)
        self.total += float(z.sum())
        self.squares += float((z * z).sum())

    def rejected(self, alpha: float) -> bool:
        return self.log_wealth >= math.log(1 / alpha)


@dataclass
class PairedQuality:
    """Paired differences of one quality figure (challenger unit minus champion unit), and both tests."""

    margin: float
    harm: BettingTest = field(init=False)
    non_inferior: BettingTest = field(init=False)
    waiting_challenger: list[float] = field(default_factory=list)
    waiting_champion: list[float] = field(default_factory=list)
    pairs: int = 0
    difference: float = 0.0

    def __post_init__(self) -> None:
        self.harm = BettingTest(-1.0, 1.0)  # Z = -D: large when the challenger is worse
        self.non_inferior = BettingTest(-1.0 + self.margin, 1.0 + self.margin)  # Z = D + margin

    def add(self, challenger: np.ndarray, champion: np.ndarray) -> None:
        self.waiting_challenger.extend(challenger.tolist())
        self.waiting_champion.extend(champion.tolist())
        n = min(len(self.waiting_challenger), len(self.waiting_champion))
        if n:
            d = np.asarray(self.waiting_challenger[:n]) - np.asarray(self.waiting_champion[:n])
            del self.waiting_challenger[:n], self.waiting_champion[:n]
            self.harm.update(-d)
            self.non_inferior.update(d + self.margin)
            self.pairs += n
            self.difference += float(d.sum())
        del self.waiting_challenger[:-MAX_QUEUE], self.waiting_champion[:-MAX_QUEUE]

    @property
    def mean_difference(self) -> float:
        return self.difference / self.pairs if self.pairs else float("nan")

    def evidence(self) -> str:
        """What a verdict's reason says of the figure: its mean paired difference and how many pairs."""
        return f"mean difference {self.mean_difference:+.4f} over {self.pairs} pairs"


@dataclass
class AucUnits:
    """One model's labelled requests paired into (positive, negative) couples: 1 if ordered right, ½ on a tie."""

    positives: list[float] = field(default_factory=list)
    negatives: list[float] = field(default_factory=list)

    def add(self, scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
        self.positives.extend(scores[labels == 1].tolist())
        self.negatives.extend(scores[labels == 0].tolist())
        n = min(len(self.positives), len(self.negatives))
        pos, neg = np.asarray(self.positives[:n]), np.asarray(self.negatives[:n])
        del self.positives[:n], self.negatives[:n]
        del self.positives[:-MAX_QUEUE], self.negatives[:-MAX_QUEUE]
        return (pos > neg) + 0.5 * (pos == neg)


def accuracy_units(scores: np.ndarray, calibrated: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """Each request's calibrated probability of being classified right: its estimated-accuracy unit."""
    return np.where(scores >= threshold, calibrated, 1 - calibrated)


@dataclass(frozen=True)
class QualityVerdict:
    outcome: QualityOutcome
    reason: str
    figures: dict[str, float]


@dataclass
class CanaryQuality:
    """The quality evidence of one rollout, kept across its analysis intervals (the tests are always valid)."""

    alpha: float = 0.05
    """Bound on a false rollback (challenger as good) and on a false promotion (worse by ``auc_margin``)."""
    auc_margin: float = 0.01
    accuracy_margin: float = 0.01
    min_units: int = 100
    """Pairs a figure needs before it can decide (a floor under the test's own evidence requirement)."""
    estimated: PairedQuality = field(init=False)
    realised: PairedQuality = field(init=False)
    challenger_auc: AucUnits = field(default_factory=AucUnits)
    champion_auc: AucUnits = field(default_factory=AucUnits)

    def __post_init__(self) -> None:
        self.estimated = PairedQuality(self.accuracy_margin)
        self.realised = PairedQuality(self.auc_margin)

    def add_estimated(self, challenger: np.ndarray, champion: np.ndarray) -> None:
        """Estimated-accuracy units (:func:`accuracy_units`) of each model's new requests."""
        self.estimated.add(challenger, champion)

    def add_labelled(
        self,
        challenger: tuple[np.ndarray, np.ndarray],
        champion: tuple[np.ndarray, np.ndarray],
    ) -> None:
        """(scores, labels) of each model's newly labelled requests."""
        self.realised.add(self.challenger_auc.add(*challenger), self.champion_auc.add(*champion))

    def verdict(self) -> QualityVerdict:
        """Roll back when either figure shows harm; promote when the realised AUC (or, before any label,
        the estimate) shows non-inferiority; else continue. Each test runs at ``alpha / 2``."""
        level = self.alpha / 2
        figures = {
            "quality_estimated_pairs": float(self.estimated.pairs),
            "quality_estimated_difference": self.estimated.mean_difference,
            "quality_realised_pairs": float(self.realised.pairs),
            "quality_realised_auc_difference": self.realised.mean_difference,
            "quality_harm_log_wealth": max(self.estimated.harm.log_wealth, self.realised.harm.log_wealth),
            "quality_decision_log_wealth": math.log(1 / level),
        }
        for name, paired in (("realised AUC", self.realised), ("estimated accuracy", self.estimated)):
            if paired.pairs >= self.min_units and paired.harm.rejected(level):
                return QualityVerdict(
                    "rollback",
                    f"challenger worse on {name}: {paired.evidence()}, evidence "
                    f"{math.exp(paired.harm.log_wealth):.0f} >= {1 / level:.0f} (always-valid test, "
                    f"false-rollback bound {level:g})",
                    figures,
                )
        deciding = self.realised if self.realised.pairs else self.estimated
        name = "realised AUC" if self.realised.pairs else "estimated accuracy"
        if deciding.pairs >= self.min_units and deciding.non_inferior.rejected(level):
            return QualityVerdict(
                "promote",
                f"challenger not worse on {name} by {deciding.margin:g} or more: {deciding.evidence()} "
                f"(always-valid test, false-promotion bound {level:g})",
                figures,
            )
        return QualityVerdict(
            "continue",
            f"quality not decided yet: {self.realised.pairs} realised AUC pairs, {self.estimated.pairs} estimated "
            f"accuracy pairs (decisions need evidence {1 / level:.0f}, at least {self.min_units} pairs)",
            figures,
        )
