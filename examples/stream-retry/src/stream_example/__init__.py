"""The stream-retry example's order processor: ``stream_example.processor:process``."""
