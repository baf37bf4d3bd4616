"""Least privilege, proven both ways (tests/terraform/test_least_privilege.py).

- ``plan``: plan a module with the ARNs AWS would give its resources and read what it grants: every
  role's policies, the queue policies, Lambda permissions, functions with their environments, the
  pipe, the event source mappings, the rule targets, the event invoke configs.
- ``recorder``: record every AWS call our code makes, and as whom (the function's role, or the
  service acting for a role: the event source mapping, the Scheduler, the pipe, Lambda's destinations).
- ``actions``: what IAM authorises each recorded call by: actions on exact ARNs, with the calls a
  service makes on the caller's behalf (KMS for encrypted queues and topics, iam:PassRole).
- ``policy``: an evaluator of IAM policy documents (allow, deny, wildcards, conditions).
"""
