"""The kernel's fixtures (kernel_world.py): the fake model scripted in every role, a workspace made from the starter."""

from kernel_world import roles, typed_workspace, workspace  # noqa: F401 - pytest finds fixtures by name
