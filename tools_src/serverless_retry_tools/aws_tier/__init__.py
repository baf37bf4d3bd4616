"""The opt-in tier against real AWS (``./build.sh test-aws``; never in CI).

It deploys each example under a unique name prefix, runs the demos' scenarios with the demos'
accounting, checks the fidelity rows an API call can check, destroys everything and sweeps what is
left by prefix. The same code runs against the local emulator inside ``./build.sh test``
(``tests/integration/test_aws_tier.py``), so it cannot rot: only the target differs
(:mod:`serverless_retry_tools.aws_tier.targets`).

- :mod:`~serverless_retry_tools.aws_tier.estimate`: the time and cost it prints before it starts;
- :mod:`~serverless_retry_tools.aws_tier.targets`: AWS or the emulator, and the opt-in gate;
- :mod:`~serverless_retry_tools.aws_tier.scenarios`: the examples' scenarios and their accounting;
- :mod:`~serverless_retry_tools.aws_tier.fidelity`: the refusals and defaults AWS documents;
- :mod:`~serverless_retry_tools.aws_tier.cleanup`: every resource by prefix, listed and deleted;
- :mod:`~serverless_retry_tools.aws_tier.runner`: the entry point.
"""
