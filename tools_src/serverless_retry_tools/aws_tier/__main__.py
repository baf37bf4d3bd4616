"""``python -m serverless_retry_tools.aws_tier``: see :mod:`serverless_retry_tools.aws_tier.runner`."""

from __future__ import annotations

import sys

from serverless_retry_tools.aws_tier.runner import main

sys.exit(main())
