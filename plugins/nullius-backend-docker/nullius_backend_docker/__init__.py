"""nullius-backend-docker: units in containers, `--backend docker`. See README.md."""
