"""Lambda deployment packages: function zips and layer zips for a Lambda runtime's Python version and
architecture, byte-for-byte reproducible.

Shared by ``serverless-retry package`` (a user's code and requirements) and scripts/build_package.py
(this project's own zips). Standard library only (scripts/build_package.py imports it by path before
the virtualenv is installed), except :mod:`serverless_retry_tools.bundling.resolve`, which the command
alone uses.
"""
