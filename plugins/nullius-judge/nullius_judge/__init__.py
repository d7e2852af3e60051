"""Judged assessment for Nullius: `nullius assess JOB`, an ACP agent as the judge of a job's trials against a rubric."""
