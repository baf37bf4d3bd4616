"""The subcommands of ``serverless-retry``, one module each: ``register(subparsers)`` adds the
command's parser and sets ``func`` to its implementation (which returns the exit status)."""
