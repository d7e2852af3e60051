"""The docker tests' shared world (docker_world.py), as a fixture."""

from docker_world import world  # noqa: F401 - registers the fixture
