"""Variants of an agent: a folder of variant.toml, instruction files and skills, run as one configuration (docs/variants.md)."""

from nullius_core.variants.folder import SkillRef, Variant, VariantToml, read_variant
from nullius_core.variants.stage import StagedVariant

__all__ = ["SkillRef", "StagedVariant", "Variant", "VariantToml", "read_variant"]
