"""Framework integrations that record a training where it runs: Trainer, Lightning, Accelerate, pytest."""
