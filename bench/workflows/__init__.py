"""Jobs built from runs and records: calibration sweeps, floors, ordering tests, refiling, rescoring, submissions,
checkpoint fetching and the pre-flight validation."""
