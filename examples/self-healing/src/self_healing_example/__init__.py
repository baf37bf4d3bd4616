"""The self-healing example's functions: ``charge`` (fails like an HTTP client, retried),
``invoice`` (a KeyError, never retried) and ``audit`` (a second subscriber that never fails)."""
