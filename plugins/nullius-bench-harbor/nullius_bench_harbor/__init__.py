"""Harbor task folders as a Nullius benchmark."""
