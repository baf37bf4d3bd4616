"""tests/scheduling.py: the tiers interleaved (spread), and the workers' lanes (LaneScheduling),
driven through xdist's own scheduler interface by a small simulation of workers running tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import _is_property_test, _relative, _tier, _whole_suite
from tests.scheduling import LaneScheduling, lanes_for, spread

STACK = "stack-scheduled-retry"  # a group of tests/terraform/stack.py's STACKS


def test_each_tier_spreads_evenly_and_keeps_its_order() -> None:
    items = (
        [f"functional/{n}" for n in range(6)]
        + ["integration/a", "integration/b"]
        + [f"terraform/{n}" for n in range(4)]
    )
    out = spread(items, lambda item: item.split("/")[0])
    assert sorted(out) == sorted(items)
    for tier in ("functional", "integration", "terraform"):
        assert [i for i in out if i.startswith(tier)] == [i for i in items if i.startswith(tier)]
    # The two integration items sit in the first and the second half, not together at one end.
    positions = [out.index("integration/a"), out.index("integration/b")]
    assert positions[0] < len(out) / 2 <= positions[1]


def test_one_tier_stays_as_it_was() -> None:
    items = ["unit/b", "unit/a", "unit/c"]
    assert spread(items, lambda item: "unit") == items


@pytest.mark.parametrize(("workers", "lanes"), [(1, 1), (2, 1), (3, 2), (4, 2), (6, 3)])
def test_half_the_workers_rounded_up_may_wait(workers: int, lanes: int) -> None:
    assert lanes_for(workers) == lanes


class _Config:
    def __init__(self, workers: int) -> None:
        self.option = type("Option", (), {"loadscopereorder": False})()
        self._tx = [f"{workers}*popen"]

    def getvalue(self, name: str) -> Any:
        assert name == "tx"
        return self._tx


@dataclass(eq=False)
class _Node:
    """A worker: runs the tests it was sent, in order, each for its duration; like an xdist worker it
    keeps its last one until it is sent more or told to shut down (pytest needs the next item to
    tear down the last one's fixtures)."""

    name: str
    queue: list[int] = field(default_factory=list)
    gateway: Any = None
    started: float = 0.0
    shutting_down: bool = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True

    def can_run(self) -> bool:
        return len(self.queue) > 1 or (bool(self.queue) and self.shutting_down)


@dataclass
class _Run:
    ran: list[tuple[str, str, float]]  # (worker, nodeid, start) in completion order
    end: float
    most_waiting_beside_busy: int  # workers in waiting work at once while busy work was queued


def _simulate(tests: dict[str, float], workers: int, applied_at: float, waiting_ids: set[str]) -> _Run:
    """Run ``tests`` (nodeid -> seconds, in collection order) on ``workers`` simulated workers; the
    stack is applied at ``applied_at``. Bounded: every step completes one test."""
    now = 0.0
    sched = LaneScheduling(_Config(workers), applied=lambda name: now >= applied_at)  # type: ignore[arg-type]
    nodes = [_Node(f"gw{n}") for n in range(workers)]
    for node in nodes:
        node.gateway = type("Gateway", (), {"id": node.name})()
    collection = list(tests)
    for node in nodes:
        sched.add_node(node)  # type: ignore[arg-type]
        sched.add_node_collection(node, collection)  # type: ignore[arg-type]
    sched.schedule()
    ran: list[tuple[str, str, float]] = []
    most = 0
    for _ in range(len(tests) + 1):
        running = [n for n in nodes if n.can_run()]
        if not running:
            break  # done, or stalled: a worker holds its last test and is never sent more
        node = min(running, key=lambda n: n.started + tests[collection[n.queue[0]]])
        now = node.started + tests[collection[node.queue[0]]]
        index = node.queue.pop(0)
        ran.append((node.name, collection[index], node.started))
        for other in nodes:  # a worker left idle starts its next test when it gets one
            if not other.queue or other is node:
                other.started = now
        sched.mark_test_complete(node, index)  # type: ignore[arg-type]
        node.started = now
        # Waiting work now held (assigned, not completed) beside queued busy work.
        if any(not any(n in waiting_ids for n in unit) for unit in sched.workqueue.values()):
            holding = [
                n
                for n in nodes
                if any(
                    not done and nodeid in waiting_ids
                    for unit in sched.assigned_work.get(n, {}).values()  # type: ignore[call-overload]
                    for nodeid, done in unit.items()
                )
            ]
            most = max(most, len(holding))
    return _Run(ran, now, most)


def _suite() -> tuple[dict[str, float], set[str]]:
    tests: dict[str, float] = {}
    for n in range(40):
        tests[f"tests/terraform/test_plans.py::test_{n}"] = 3.0
    for n in range(6):
        tests[f"tests/integration/test_runtime.py::test_{n}@tests/integration/test_runtime.py"] = 10.0
    for n in range(4):
        tests[f"tests/integration/test_fidelity.py::test_{n}"] = 8.0
    for n in range(5):
        tests[f"tests/integration/test_example.py::test_{n}@{STACK}"] = 12.0
    tests["tests/terraform/test_apply.py::test_outputs@" + STACK] = 1.0
    for n in range(60):
        tests[f"tests/unit/test_small.py::test_{n}"] = 0.5
    return tests, {t for t in tests if t.startswith("tests/integration/") or t.endswith(STACK)}


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_every_test_runs_once_and_waiting_never_fills_more_than_its_lanes(workers: int) -> None:
    tests, waiting = _suite()
    run = _simulate(tests, workers, applied_at=30.0, waiting_ids=waiting)
    assert sorted(nodeid for _, nodeid, _ in run.ran) == sorted(tests)
    assert run.most_waiting_beside_busy <= lanes_for(workers)


def test_a_stack_group_waits_for_its_apply_then_goes_first_and_stays_on_one_worker() -> None:
    tests, waiting = _suite()
    run = _simulate(tests, 3, applied_at=30.0, waiting_ids=waiting)
    stack = [(worker, start) for worker, nodeid, start in run.ran if nodeid.endswith(STACK)]
    assert len({worker for worker, _ in stack}) == 1
    assert min(start for _, start in stack) >= 30.0
    # Taken as soon as a lane was free after the apply, not after the queued busy work: the last
    # busy test ends after the stack group has started.
    last_busy_start = max(start for _, nodeid, start in run.ran if nodeid not in waiting)
    assert min(start for _, start in stack) < last_busy_start


def test_waiting_work_starts_at_once_beside_busy_work() -> None:
    tests, waiting = _suite()
    run = _simulate(tests, 3, applied_at=30.0, waiting_ids=waiting)
    first_waiting = min(start for _, nodeid, start in run.ran if nodeid in waiting)
    assert first_waiting <= 3.0  # in the first round, though the integration tests come after 40 plans


def test_lanes_shorten_the_run_against_plain_loadgroup() -> None:
    """The same suite, waiting work queued after busy work: in lanes the waiting overlaps the busy
    work instead of ending the run with every worker waiting."""
    tests, waiting = _suite()
    run = _simulate(tests, 3, applied_at=30.0, waiting_ids=waiting)
    busy = sum(seconds for nodeid, seconds in tests.items() if nodeid not in waiting)
    slowest_lane = max(
        sum(tests[nodeid] for worker, nodeid, _ in run.ran if worker == w and nodeid in waiting)
        for w in {worker for worker, _, _ in run.ran}
    )
    # Waiting spreads over two lanes and busy work fills the third worker meanwhile.
    assert run.end < slowest_lane + busy / 3 + 15


def _config(source: pytest.Config.ArgsSource, **options: object) -> Any:
    defaults: dict[str, object] = {
        "keyword": "", "markexpr": "", "lf": False, "deselect": [], "ignore": [], "ignore_glob": [], "stepwise": False,
    }  # fmt: skip
    return SimpleNamespace(args_source=source, option=SimpleNamespace(**{**defaults, **options}))


@pytest.mark.parametrize(
    ("source", "options"),
    [
        (pytest.Config.ArgsSource.ARGS, {}),  # paths given: tests/unit, one file, one test
        (pytest.Config.ArgsSource.TESTPATHS, {"keyword": "fidelity"}),
        (pytest.Config.ArgsSource.TESTPATHS, {"markexpr": "not integration"}),
        (pytest.Config.ArgsSource.TESTPATHS, {"lf": True}),
        (pytest.Config.ArgsSource.TESTPATHS, {"deselect": ["tests/unit/test_regex.py"]}),
        (pytest.Config.ArgsSource.TESTPATHS, {"ignore": ["tests/integration"]}),
    ],
)
def test_only_a_run_of_the_whole_suite_applies_every_stack_before_collection(
    source: pytest.Config.ArgsSource, options: dict[str, object]
) -> None:
    """The controller cannot see which tests a run holds before a worker has collected: it applies
    every stack at once only when nothing narrows the run (one test must not cost eight applies)."""
    assert _whole_suite(_config(pytest.Config.ArgsSource.TESTPATHS))
    assert not _whole_suite(_config(source, **options))


def test_the_long_tests_of_a_tier_are_not_queued_at_its_end(request: pytest.FixtureRequest) -> None:
    """This run's own queue: the unit tier (the filler that ends a run) starts with its property
    tests, the long ones, and the terraform tier's niced scans (checkov over the modules, validate
    of the examples) come in its first half. Queued last, each kept one worker busy alone at the end
    of a run."""
    if not _whole_suite(request.config):
        pytest.skip("only the whole suite's queue is the one to check")
    items = request.session.items
    flags = [_is_property_test(item) for item in items if _tier(item) == "unit"]
    assert any(flags), "no property test in the unit tier"
    assert flags == sorted(flags, reverse=True), "a property test is queued after a short unit test"
    terraform = [str(_relative(item)) for item in items if _tier(item) == "terraform"]
    scans = ("tests/terraform/test_modules_checkov.py", "tests/terraform/test_examples_validate.py")
    for scan in scans:
        assert terraform.index(scan) < len(terraform) / 2, f"{scan} is queued in the second half of its tier"
