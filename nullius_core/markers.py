"""The pluggy markers of the `nullius` project; plugins import `hookimpl` from `nullius_core`."""

import pluggy

PROJECT = "nullius"
ENTRY_POINT_GROUP = "nullius"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
