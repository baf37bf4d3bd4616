"""How the suite's groups are handed to pytest-xdist workers: loadgroup, less one habit.

xdist's loadgroup gives a worker its next group as soon as it has two tests or fewer left to run.
Each stack group (tests/terraform/stack.py) runs for about a minute, mostly waiting on logical
time, and its longest test is seldom its last but one. So a worker still in one stack group took the
next one as well, and ran the two back to back while another worker had nothing left to do: with
three workers, the run's last 70 seconds kept one core busy.

Here a worker that still has tests of a stack group to run is given the next group that is not a
stack's. When only stack groups are left, it takes none and stops once its own tests are done, if
another worker without a stack group is still running to take them; otherwise it takes the next one
as loadgroup would.

And a stack group is handed out as soon as its stack is applied, ahead of the queue, to a worker
not in a stack group, as long as another worker stays on other work: in collection order the stack
groups came after the whole terraform tier (their stacks were ready two minutes earlier), and
their waiting then ended the run with the cores a quarter idle. Spread among the terraform tier's
busy tests, the waiting fills in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from xdist.scheduler import LoadGroupScheduling
from xdist.workermanage import WorkerController

from tests.terraform.stack import REGISTRY, STACKS, group

STACK_GROUPS = {group(spec): spec.name for spec in STACKS}
T = TypeVar("T")


def spread(items: Sequence[T], tier: Callable[[T], str]) -> list[T]:
    """The tiers' items evenly interleaved, each tier in its own order. The integration tier mostly
    waits on logical time while the functional and terraform tiers keep the CPU busy: run back to
    back (in collection order), the integration tier left the cores a third idle for a minute and
    the terraform tier later had them all to itself."""
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


class StackAwareScheduling(LoadGroupScheduling):
    def _in_stack(self, node: WorkerController) -> bool:
        return any(
            is_stack(scope) and not all(unit.values())
            for scope, unit in self.assigned_work.get(node, {}).items()
        )

    def _applied_stack(self) -> str | None:
        """The first stack group in the queue whose stack is applied, if any."""
        return next(
            (scope for scope in self.workqueue if is_stack(scope) and REGISTRY.applied(STACK_GROUPS[scope])),
            None,
        )

    def _reschedule(self, node: WorkerController) -> None:
        if (
            not node.shutting_down
            and self.workqueue
            and self._pending_of(self.assigned_work[node]) <= 2
            and not self._in_stack(node)
        ):
            others_in_stacks = sum(1 for n in self.nodes if n is not node and self._in_stack(n))
            ready = self._applied_stack() if others_in_stacks <= len(self.nodes) - 2 else None
            if ready is not None:
                self.workqueue.move_to_end(ready, last=False)
                self._assign_work_unit(node)
                return
        if (
            node.shutting_down
            or not self.workqueue
            or self._pending_of(self.assigned_work[node]) > 2
            or not self._in_stack(node)
        ):
            super()._reschedule(node)
            return
        other = next((scope for scope in self.workqueue if not is_stack(scope)), None)
        if other is not None:
            self.workqueue.move_to_end(other, last=False)
            self._assign_work_unit(node)
            return
        if any(n is not node and not n.shutting_down and not self._in_stack(n) for n in self.nodes):
            node.shutdown()
            return
        super()._reschedule(node)
