"""BFCL v4 for Nullius."""
