"""Lambda entry point of the operator's redrive: ``serverless_retry.handlers.redrive_queue.handler``.

The same redrive as ``serverless-retry redrive``, run inside AWS. Invoke it with the command's
options as a JSON event (snake_case names, see :mod:`serverless_retry.redrive.options`)::

    {"outcome": ["exhausted"], "error_type": "TimeoutError", "older_than": "1h",
     "max": 500, "rate": 20, "dry_run": true}

The queues come from the environment that ``modules/scheduled-retry`` sets when its operator function
is on: ``SERVERLESS_RETRY_REDRIVE_FROM_QUEUE_URLS`` (comma-separated; the first is the default
``from_queue_url``) and ``SERVERLESS_RETRY_REDRIVE_TO_QUEUE_URL``. An event naming any other queue is
refused: the function's role reaches only these. The pass stops ``TIME_MARGIN_MS`` before the
function's timeout and leaves the rest in place (``"complete": false``: invoke it again). One
invocation is one run: it moves each message at most once and only what the queue held when it
started (``"arrived"``, ``"repeated"``: left in place; see :mod:`serverless_retry.redrive.queue`).
``"native": true`` starts a StartMessageMoveTask and returns its handle without waiting.
``"to_function"`` is refused here (:data:`TO_FUNCTION_REFUSED`): the queues this function reads hold no
record of a failed invocation (the consumer's envelopes, the source queue's dead letters), so its role
may invoke no function; re-invoke self-healing or Lambda destination records with
``serverless-retry redrive --to-function`` under the operator's own credentials.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools import Logger

from serverless_retry.aws import client
from serverless_retry.clock import Clock, SystemClock
from serverless_retry.environment import archive_location
from serverless_retry.redrive.native import check_native, start_native
from serverless_retry.redrive.options import OptionsError, RedriveOptions, options_from_mapping
from serverless_retry.redrive.queue import RedriveReport, Resolver, redrive

__all__ = [
    "ENV_FROM_QUEUE_URLS",
    "ENV_TO_QUEUE_URL",
    "TIME_MARGIN_MS",
    "TO_FUNCTION_REFUSED",
    "handler",
    "run",
]

ENV_FROM_QUEUE_URLS = "SERVERLESS_RETRY_REDRIVE_FROM_QUEUE_URLS"
ENV_TO_QUEUE_URL = "SERVERLESS_RETRY_REDRIVE_TO_QUEUE_URL"
TIME_MARGIN_MS = 10_000  # release what the pass holds and answer before the timeout
LISTED_MESSAGES = 100  # the response lists at most this many moved messages
# Granting lambda:InvokeFunction on "whatever function a record names" is no scoped grant, and no path
# of this function's queues would use one (tests/terraform/test_least_privilege.py).
TO_FUNCTION_REFUSED = (
    "this function re-invokes no function: its queues hold no record of a failed invocation and its role "
    "may invoke none; re-invoke self-healing or Lambda destination records with "
    "`serverless-retry redrive --from-queue-url URL --to-function` under your own credentials"
)

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "serverless-retry-redrive"))


def _allowed(environ: Mapping[str, str]) -> tuple[list[str], str | None]:
    sources = [u.strip() for u in environ.get(ENV_FROM_QUEUE_URLS, "").split(",") if u.strip()]
    return sources, environ.get(ENV_TO_QUEUE_URL) or None


def options_for(event: Mapping[str, Any], environ: Mapping[str, str]) -> RedriveOptions:
    """The event's options with the queues defaulted from, and confined to, the environment."""
    if not isinstance(event, Mapping):
        raise OptionsError("event", f"expected a JSON object of redrive options, got {type(event).__name__}")
    sources, target = _allowed(environ)
    data = dict(event)
    if data.get("to_function") not in (None, False):
        raise OptionsError("to_function", TO_FUNCTION_REFUSED)
    if sources:
        data.setdefault("from_queue_url", sources[0])
        if data["from_queue_url"] not in sources:
            raise OptionsError("from_queue_url", f"this function redrives only from {', '.join(sources)}")
    if target:
        if data.get("to_queue_url") not in (None, target):
            raise OptionsError("to_queue_url", f"this function redrives only to {target}")
        # A native move without a destination returns each message to its origin: keep that choice.
        if not data.get("native"):
            data.setdefault("to_queue_url", target)
    return options_from_mapping(data)


def _summary(report: RedriveReport) -> dict[str, Any]:
    rate = report.measured_rate()
    return {
        "dry_run": report.dry_run,
        "complete": report.complete,
        "stopped": report.stopped,
        **report.counts(),
        "measured_rate": round(rate, 2) if rate is not None else None,
        "messages": [
            {
                "id": m.envelope_id,
                "message_id": m.message_id,
                "outcome": m.outcome,
                "error_type": m.error_type,
            }
            for m in report.moved[:LISTED_MESSAGES]
        ],
        "failures": [{"message_id": m.message_id, "error": why} for m, why in report.failed],
        "duplicated": [{"message_id": m.message_id, "error": why} for m, why in report.duplicated],
        "notes": [{"message_id": m.message_id, "note": note} for m, note in report.notes],
        # Left by the once-per-run rule (queue_redrive): a later invocation takes them.
        "found_at_start": report.found_at_start,
        "repeated_messages": [
            {"message_id": m.message_id, "why": why} for m, why in report.repeated[:LISTED_MESSAGES]
        ],
    }


def run(
    event: Mapping[str, Any],
    context: Any,
    *,
    sqs: Any = None,
    environ: Mapping[str, str] | None = None,
    clock: Clock | None = None,
    s3: Any = None,
) -> dict[str, Any]:
    environ = os.environ if environ is None else environ
    options = options_for(event, environ)
    sqs = sqs or client("sqs")
    if options.native:
        check = check_native(sqs, options.from_queue_url, options.to_queue_url)
        result: dict[str, Any] = {
            "native": True,
            "applies": check.applies,
            "problems": list(check.problems),
            "warnings": list(check.warnings),
            "approximate_messages": check.approximate_messages,
            "dry_run": options.dry_run,
        }
        if check.applies and not options.dry_run:
            result["task_handle"] = start_native(sqs, check, rate=options.rate)
        return result

    def out_of_time() -> str | None:
        remaining = context.get_remaining_time_in_millis() if context is not None else None
        return (
            "time budget: invoke again for the rest"
            if remaining is not None and remaining < TIME_MARGIN_MS
            else None
        )

    report = redrive(
        sqs, options, clock=clock or SystemClock(), should_stop=out_of_time, resolve=_resolver(environ, s3)
    )
    summary = _summary(report)
    logger.info("redrive finished", extra={k: v for k, v in summary.items() if not isinstance(v, list)})
    return summary


def _resolver(environ: Mapping[str, str], s3: Any) -> Resolver | None:
    """Claim-check pointers read through the archive the environment names (none: left in place)."""
    location = archive_location(environ)
    if location is None:
        return None
    from serverless_retry.payload_pointer import PayloadTarget
    from serverless_retry.payload_store import read_through

    target = PayloadTarget(*location)
    return lambda view: read_through(view, lambda: s3 or client("s3"), target)


@logger.inject_lambda_context(clear_state=True)
def handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    return run(event, context)
