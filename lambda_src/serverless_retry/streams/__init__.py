"""Pattern 4, stream retry: Kinesis and DynamoDB Streams records retried through pattern 1's retry queue.

A failed stream record is handed off (an envelope carrying the record, sent to the retry queue with the
policy's delay) so its shard goes on; the retry queue's ``RetryingConsumer`` runs the same processor on
it again through ``adapter.stream_processor``. See docs/patterns/stream-retry.md.
"""
