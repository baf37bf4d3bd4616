"""serverless-retry's tools: the ``serverless-retry`` command, the local AWS emulator and runtime, and
the operator commands. Nothing here is deployed: ``scripts/build_package.py`` zips only
``serverless_retry`` (``lambda_src/``), the code that runs in Lambda; a test lists the zip's contents.
"""
