"""How the suite's groups are handed to pytest-xdist workers: loadgroup, in lanes.

The suite holds two kinds of work. Most of it keeps a core busy (unit and functional tests, the
terraform tier's plans and scans). The integration tier mostly waits: on logical-clock timers, on
emulators, on the example stacks' applies (tests/terraform/stack.py). On two cores, a run is short
when the waiting overlaps busy work, never other waiting.

xdist's loadgroup hands out the queue in order. Waiting work then bunched up: the stack groups come
when their stacks are applied, two minutes in, and the integration tier's own files were in the
same stretch; with two or three workers waiting at once the cores stood a quarter to a half idle
for a minute and a half, and the run's end kept one core busy.

So the workers form lanes. At most ``lanes`` workers (half of them, rounded up) hold waiting work at
a time; a worker outside a lane takes the first ready waiting unit as soon as a lane is free (a
stack group once its stack is applied, ahead of the integration tier's other files: it gates the
run's end), and busy work otherwise. A worker in a lane gets busy work queued behind its waiting,
never a second waiting unit. When no busy work is left, the cap is moot (no core has anything else
to do) and a worker takes waiting work as loadgroup would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from xdist.scheduler import LoadGroupScheduling
from xdist.workermanage import WorkerController

from tests.terraform.stack import REGISTRY, STACKS, group

STACK_GROUPS = {group(spec): spec.name for spec in STACKS}
WAITING_TIER = "tests/integration/"
T = TypeVar("T")


def spread(items: Sequence[T], tier: Callable[[T], str]) -> list[T]:
    """The tiers' items evenly interleaved, each tier in its own order: the functional and terraform
    tiers' heavy parts (plans, scans, fault runs) start early, beside the stacks' applies."""
    tiers: dict[str, list[T]] = {}
    for item in items:
        tiers.setdefault(tier(item), []).append(item)
    keyed = [
        ((i + 0.5) / len(members), n, item)
        for n, members in enumerate(tiers.values())
        for i, item in enumerate(members)
    ]
    return [item for *_, item in sorted(keyed, key=lambda k: (k[0], k[1]))]


def is_stack(scope: str) -> bool:
    return scope in STACK_GROUPS


def lanes_for(workers: int) -> int:
    """How many workers may wait at once: half, rounded up (one of two, two of three or four)."""
    return max(1, (workers + 1) // 2)


def is_waiting(scope: str, unit: dict[str, bool]) -> bool:
    """Whether a work unit mostly waits: a stack group (it waits for its apply, then on its
    emulator's clock), or any test of the integration tier."""
    return is_stack(scope) or any(nodeid.startswith(WAITING_TIER) for nodeid in unit)


def is_ready(scope: str, applied: Callable[[str], bool]) -> bool:
    """A stack group is ready once its stack's apply has ended; other work always is."""
    return not is_stack(scope) or applied(STACK_GROUPS[scope])


class LaneScheduling(LoadGroupScheduling):
    def __init__(
        self, config: Any, log: Any = None, applied: Callable[[str], bool] = REGISTRY.applied
    ) -> None:
        super().__init__(config, log)
        self.applied = applied  # whether stack ``name`` is applied (the controller's REGISTRY)
        self._waiting: dict[str, bool] = {}  # scope -> is_waiting, once per scope

    def _is_waiting(self, scope: str, unit: dict[str, bool]) -> bool:
        if scope not in self._waiting:
            self._waiting[scope] = is_waiting(scope, unit)
        return self._waiting[scope]

    def _in_lane(self, node: WorkerController) -> bool:
        return any(
            self._is_waiting(scope, unit) and not all(unit.values())
            for scope, unit in self.assigned_work.get(node, {}).items()
        )

    def _first(self, waiting: bool, ready_only: bool = False) -> str | None:
        return next(
            (
                scope
                for scope, unit in self.workqueue.items()
                if self._is_waiting(scope, unit) == waiting
                and (not ready_only or is_ready(scope, self.applied))
            ),
            None,
        )

    def _first_waiting(self) -> str | None:
        """The first ready stack group, else the first other ready waiting unit."""
        stacks = (s for s in self.workqueue if is_stack(s) and is_ready(s, self.applied))
        return next(stacks, None) or self._first(waiting=True, ready_only=True)

    def _give(self, node: WorkerController, scope: str) -> None:
        self.workqueue.move_to_end(scope, last=False)
        self._assign_work_unit(node)

    def _reschedule(self, node: WorkerController) -> None:
        if node.shutting_down or not self.workqueue or self._pending_of(self.assigned_work[node]) > 2:
            super()._reschedule(node)
            return
        in_lane = self._in_lane(node)
        lanes_taken = sum(1 for n in self.nodes if self._in_lane(n))
        if not in_lane and lanes_taken < lanes_for(len(self.nodes)):
            waiting = self._first_waiting()
            if waiting is not None:
                self._give(node, waiting)
                return
        busy = self._first(waiting=False)
        if busy is not None:
            self._give(node, busy)
            return
        # No busy work left: the cap is moot. Every worker gets waiting work, also one in a lane: an
        # xdist worker keeps its last test until it is sent more, so holding back would stall it.
        self._give(node, self._first_waiting() or next(iter(self.workqueue)))
