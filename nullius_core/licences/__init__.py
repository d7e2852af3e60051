"""A benchmark's licences (`needs_secrets`): kept per benchmark under SECRETS_DIR, handed to a unit's parts in memory.

See store.py (where they are kept) and handout.py (how a unit's agent and
driver get them).
"""

from nullius_core.licences.store import SecretStore, declared_secrets

__all__ = ["SecretStore", "declared_secrets"]
