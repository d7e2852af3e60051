"""The Nullius app: the catalogue, the builder, runs and the viewer in a browser, every action a `nullius` command it runs."""
