"""The provider `embedded`: a small model served on this machine's loopback for the length of a run."""
