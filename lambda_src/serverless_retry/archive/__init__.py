"""The archive: every terminal message (retry-exhausted queue, DLQs, self-healing exhausted queue) kept
as one S3 object, the dead set an operator lists, redrives and discards (issue 31).

``record`` is the object's format and key (pure), ``settings`` the archiver's environment (pure),
``store`` the S3 calls, ``archiver`` one SQS batch drained into the archive; the Lambda entry point is
``serverless_retry.handlers.archive.handler``.
"""
