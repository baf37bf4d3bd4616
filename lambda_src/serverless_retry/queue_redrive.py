"""The 0.2 import path of ``serverless_retry.redrive.queue``, kept so that operators' own scripts
written against it go on working (tests/unit/test_import_paths.py checks it names the same objects).
New code imports ``serverless_retry.redrive.queue``."""

from serverless_retry.redrive.queue import *  # noqa: F403 (a re-export, every public name)
from serverless_retry.redrive.queue import __all__  # noqa: F401 (the same public names)
