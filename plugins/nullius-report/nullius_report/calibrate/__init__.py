"""`nullius calibrate`: trials published for a human's review of the judge (git layer; platform layer behind a Protocol)."""
