"""Every JSON under results/ is read and written here, typed and validated (run records, latency records,
calibration summaries, orderings, submissions, significance): no other module opens those files."""
