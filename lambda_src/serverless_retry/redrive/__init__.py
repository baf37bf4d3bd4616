"""The operator's redrive of a retry-exhausted queue or a DLQ: ``queue`` (the redrive itself: each
message's chain continued, reset or refused, sent before it is deleted), ``options`` (what an
operator may ask of it, validated once for the CLI and the redrive function) and ``native`` (SQS's own
message-move tasks, for a DLQ whose messages need no unwrapping)."""
