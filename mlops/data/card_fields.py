"""What only a person can say about a model: the ``card:`` block of a dataset's schema file.

The model card (``mlops card``) fills every other section from what the platform recorded;
these fields (intended use, users, limitations …) are written once by the model's owner in
the schema file and copied into every card of every version trained on that declaration.
A field left empty is listed on the card as still to be filled, never silently omitted.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from mlops.settings import SETTINGS_CONFIG


class CardFields(BaseModel):
    """The human-written parts of a model card (Model Card Toolkit ``considerations`` and owners)."""

    model_config = SETTINGS_CONFIG

    overview: str = ""
    """One or two sentences: what the model predicts, for whom."""
    intended_uses: tuple[str, ...] = Field(default=())
    """What the model is for (each a use case), e.g. 'rank loan applications for manual review'."""
    intended_users: tuple[str, ...] = Field(default=())
    """Who uses its outputs, e.g. 'credit analysts'."""
    out_of_scope_uses: tuple[str, ...] = Field(default=())
    """Uses the model must not be put to, e.g. 'automatic rejection without human review'."""
    limitations: tuple[str, ...] = Field(default=())
    """Known technical limitations: data it was not trained on, conditions that degrade it."""
    ethical_considerations: tuple[str, ...] = Field(default=())
    """Risks to people and how they are mitigated ('risk: mitigation')."""
    human_oversight: str = ""
    """How a person oversees the model's decisions (EU AI Act Art. 14; Annex IV 2(e))."""
    owners: tuple[str, ...] = Field(default=())
    """Teams or people accountable for the model."""
    contact: str = ""
    """Where to send questions about the model."""
    license: str = ""
    """SPDX identifier or 'proprietary'."""

    def empty_fields(self) -> list[str]:
        """The fields nobody filled yet, as ``card.<field>`` addresses (the card lists them)."""
        return [f"card.{name}" for name in type(self).model_fields if not getattr(self, name)]
