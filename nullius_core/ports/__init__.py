"""Ports (named, versioned contracts), their kits, and which pairs fit."""

from nullius_core.ports.fit import FitResult, fit, needs_of, offered, shown_skills
from nullius_core.ports.model import Port

__all__ = ["FitResult", "Port", "fit", "needs_of", "offered", "shown_skills"]
