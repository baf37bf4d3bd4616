"""The scheduled-retry example's order processor: ``orders_example.process:handle``."""
