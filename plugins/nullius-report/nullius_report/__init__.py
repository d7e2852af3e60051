"""Nullius's results: economics per trial, compare, export (flat layout, OpenTelemetry), calibrate publish."""
