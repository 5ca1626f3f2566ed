"""The worker runtime (`worqr.Worker`) and the multi-process supervisor."""
