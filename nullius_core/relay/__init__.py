"""The relay: Nullius as the agent's model endpoint, recording every call, holding every key."""
