"""Fault injection for the consumer's AWS clients: proxies that fail chosen calls or batch entries the
way the real services report it (a ClientError, or an entry in a SendMessageBatch's ``Failed``),
while everything else reaches moto."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from botocore.exceptions import ClientError

EntryPredicate = Callable[[str, dict[str, Any]], bool]  # (queue_url, entry) -> fail it?


def client_error(code: str, operation: str, message: str = "injected fault") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)  # type: ignore[arg-type]


class FaultySqs:
    def __init__(
        self,
        real: Any,
        *,
        fail_entry: EntryPredicate | None = None,
        fail_call: Callable[[str], bool] | None = None,
    ) -> None:
        self._real = real
        self._fail_entry = fail_entry or (lambda url, entry: False)
        self._fail_call = fail_call or (lambda url: False)
        self.injected_entries = 0
        self.injected_calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def send_message_batch(self, *, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        if self._fail_call(QueueUrl):
            self.injected_calls += 1
            raise client_error("ServiceUnavailable", "SendMessageBatch")
        keep = [e for e in Entries if not self._fail_entry(QueueUrl, e)]
        failed = [
            {"Id": e["Id"], "SenderFault": False, "Code": "InternalError", "Message": "injected fault"}
            for e in Entries
            if e not in keep
        ]
        self.injected_entries += len(failed)
        response: dict[str, Any] = (
            dict(self._real.send_message_batch(QueueUrl=QueueUrl, Entries=keep))
            if keep
            else {"Successful": []}
        )
        response["Failed"] = [*response.get("Failed", []), *failed]
        return response


class FaultyScheduler:
    def __init__(self, real: Any, *, throttle: Callable[[dict[str, Any]], bool]) -> None:
        self._real = real
        self._throttle = throttle
        self.injected = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def create_schedule(self, **params: Any) -> dict[str, Any]:
        if self._throttle(params):
            self.injected += 1
            raise client_error("ThrottlingException", "CreateSchedule", "Rate exceeded")
        return dict(self._real.create_schedule(**params))


def fail_operation(client: Any, operation: str, code: str, status: int = 400) -> None:
    """Make every call of ``operation`` on this botocore client fail with ``code``, through the
    ``before-call`` event (the response botocore would have parsed from the service)."""

    def respond(**_: Any) -> tuple[Any, dict[str, Any]]:
        http = SimpleNamespace(status_code=status, headers={})
        return http, {"Error": {"Code": code, "Message": "injected fault"}, "ResponseMetadata": {}}

    client.meta.events.register(
        f"before-call.{client.meta.service_model.service_id.hyphenize()}.{operation}", respond
    )
