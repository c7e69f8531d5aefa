"""The tuning pipeline: validated data, then parallel Optuna workers sharing one study."""
