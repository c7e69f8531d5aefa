"""The training pipeline: validate, train, evaluate, export, register, gate, promote."""
