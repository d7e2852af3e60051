"""A benchmark's licences (`needs_secrets`): kept per benchmark under SECRETS_DIR, handed to a unit's parts in memory.

See store.py (where they are kept, or handed in memory: `hand_in`) and
handout.py (how a unit's agent and driver get them). `SecretStore` and
`declared_secrets` are public: a command that hands a run's licences on (the
app's run on a host) reads them here.
"""

from nullius_core.licences.store import SecretStore, declared_secrets, hand_in

__all__ = ["SecretStore", "declared_secrets", "hand_in"]
