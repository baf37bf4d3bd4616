"""The demos' accounting of archived messages (issue 31): a record the archiver wrote counts as the
message its queue held would have counted, in its final place ``archive``, for the queue demos
(accounting.parse_archived) and the self-healing demo (selfheal_accounting.parse_archived); the
report says ``archived: <outcome>``. The records are built by the archive's own builder from the
shared samples of every exhausted form."""

from __future__ import annotations

import io
import json

import pytest
from serverless_retry.archive.record import ArchiveSource, archive_record
from serverless_retry_tools.local.demos import selfheal_accounting
from serverless_retry_tools.local.demos.accounting import (
    SentMessage,
    account,
    parse_archived,
    parse_final,
    parse_log_lines,
)
from serverless_retry_tools.local.demos.accounting_report import print_fates, print_totals
from serverless_retry_tools.local.demos.demo_frame import ProgressLines

from tests.unit.test_archive_record import DLQ, EVENTS, NOW, PREFIX, SELFHEAL, from_sample, sqs_record

FORMS = ["envelope", "framed", "original+meta", "bare"]


@pytest.mark.parametrize("form", FORMS)
def test_an_archived_message_counts_as_its_queue_copy_would(form: str) -> None:
    event, record = from_sample(form)
    queued = parse_final(
        "exhausted",
        {"MessageId": event["messageId"], "Body": event["body"], "MessageAttributes": _api(form)},
    )
    archived = parse_archived(record)
    assert archived.place == "archive"
    assert archived.archived_from == "exhausted"
    assert (archived.id, archived.outcome, archived.transports, archived.reason) == (
        queued.id,
        queued.outcome,
        queued.transports,
        queued.reason,
    )
    assert archived.attempt == max(queued.attempt, 1)  # the archive counts a bare message's one attempt


def _api(form: str) -> dict[str, object]:
    sample = next(
        s for s in json.loads((EVENTS / "exhausted-messages.json").read_text()) if s["form"] == form
    )
    return dict(sample["message"]["MessageAttributes"])


def test_a_dead_lettered_message_is_archived_as_dlq_under_its_own_id() -> None:
    event = sqs_record('{"order_id": "o-1"}', message_id="m-dlq", queue=DLQ, receive_count=1)
    source = ArchiveSource(place="dlq", source_queue_arn=None, deployment="orders")
    final = parse_archived(archive_record(event, source=source, now=NOW, prefix=PREFIX))
    assert (final.place, final.id, final.outcome, final.archived_from) == ("archive", "m-dlq", "dlq", "dlq")


def test_the_report_says_archived_and_counts_them() -> None:
    _, record = from_sample("envelope")
    final = parse_archived(record)
    sent = [SentMessage(final.id, "always-timeout", "o-1", final.outcome)]
    accounting = account(sent, [final], parse_log_lines([]))
    assert accounting.balanced
    assert accounting.archived == {final.outcome: 1}
    stream = io.StringIO()
    out = ProgressLines(stream)
    print_fates(accounting, out)
    assert print_totals(accounting, 1, out)
    text = stream.getvalue()
    assert f"archived: {final.outcome}" in text
    assert f"archived 1 of them (the archiver took them from the queues): {final.outcome} 1" in text


def test_a_self_healing_record_counts_as_its_exhausted_queue_copy_would() -> None:
    event, record = from_sample("self-healing", SELFHEAL)
    queued = selfheal_accounting.parse_exhausted(event["body"], _api("self-healing"))
    archived = selfheal_accounting.parse_archived(record, {})
    assert archived.place == "archive (exhausted-queue)"
    assert (archived.message_id, archived.function, archived.outcome, archived.error_type) == (
        queued.message_id,
        queued.function,
        queued.outcome,
        queued.error_type,
    )
