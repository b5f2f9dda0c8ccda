"""The host: an agent's sessions kept and served to clients that come and go."""
