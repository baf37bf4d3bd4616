"""The claims protocol over larger configurations than the exhaustive check can cover: hypothesis
picks the events (the same events and invariants as tests/support/protocol_check.py) for 3 or 4
messages, the policy's default 5 attempts, up to 4 faults and 2 redrives, every kind of event on.

Each rule is one event between invocations (hypothesis also answers the choice points inside the
invocation: a crash, a lost answer, a concurrent delivery at any AWS call); teardown lets logical time
run out without faults, does what operators do with what is left (protocol_check.Path.finish) and
checks the invariants. Bounded: 500 examples of at most 60 events (about 10 s).
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from tests.support.protocol_check import EVENTS, Config, Path, Rig

RIGS: dict[Config, Rig] = {}  # the consumers of one configuration, made once


class ClaimsProtocol(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.path: Path | None = None
        self.data: st.DataObject | None = None
        self.ended = False

    def choose(self, labels: Sequence[str]) -> int:
        assert self.data is not None
        return self.data.draw(st.integers(0, len(labels) - 1), label=" | ".join(labels)[:200])

    @initialize(
        messages=st.integers(3, 4), faults=st.integers(1, 4), operations=st.integers(0, 2), data=st.data()
    )
    def start(self, messages: int, faults: int, operations: int, data: st.DataObject) -> None:
        config = Config(messages=messages, attempts=5, faults=faults, operations=operations, events=EVENTS)
        rig = RIGS.get(config) or RIGS.setdefault(config, Rig(config))
        self.data = data
        self.path = Path(rig, self.choose)

    @rule(data=st.data())
    def event(self, data: st.DataObject) -> None:
        assert self.path is not None
        if not self.ended:  # (once the path ended, the remaining steps of the example do nothing)
            self.data = data
            self.ended = not self.path.step()

    def teardown(self) -> None:
        path = self.path
        if path is None:
            return
        path.faults = path.operations = path.deferrals = 0
        path.settling = True
        if not self.ended:
            while path.step():
                pass
        path.finish()
        problems = path.violations()
        assert not problems, "\n".join([*problems, *path.log])


ClaimsProtocol.TestCase.settings = settings(
    max_examples=500,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
test_claims_protocol_stateful = ClaimsProtocol.TestCase
