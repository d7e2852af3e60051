"""Nullius as the substrate of nanoRSI: rollouts as one-unit Nullius runs, judging after the freeze, `nullius improve`."""
