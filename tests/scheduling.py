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
"""

from __future__ import annotations

from xdist.scheduler import LoadGroupScheduling
from xdist.workermanage import WorkerController

from tests.terraform.stack import STACKS, group

STACK_GROUPS = frozenset(group(spec) for spec in STACKS)


def is_stack(scope: str) -> bool:
    return scope in STACK_GROUPS


class StackAwareScheduling(LoadGroupScheduling):
    def _in_stack(self, node: WorkerController) -> bool:
        return any(
            is_stack(scope) and not all(unit.values())
            for scope, unit in self.assigned_work.get(node, {}).items()
        )

    def _reschedule(self, node: WorkerController) -> None:
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
