"""Orders booked into a ledger by a plain Powertools ``BatchProcessor`` handler: native SQS retry.

Two releases ship side by side so a Terraform variable can switch between them: ``native_orders.buggy``
(every order fails) and ``native_orders.fixed``. Both use the same handler (:mod:`native_orders.app`)
and the same idempotent booking (:mod:`native_orders.ledger`); only the parsing of an order differs.
"""
