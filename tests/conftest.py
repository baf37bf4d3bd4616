"""Cross-tier sharing, and how the suite splits across pytest-xdist workers.

Each example stack is applied once per test run (see tests/terraform/stack.py). The applies start as
soon as collection is done, in background threads, so they overlap the unit and functional tiers;
the terraform and integration tiers then use the same applied stacks.

``./build.sh test`` runs ``-n 4 --dist loadgroup`` (pyproject's addopts hold the ``--dist`` part).
Each test gets an xdist group when it must not be split from others (see ``_group``); the rest are
handed out one at a time to whichever worker is free, by tests/scheduling.py's scheduler.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from serverless_retry_tools.local.runtime.functions import CODE_CACHE_VARIABLE

from tests.scheduling import LaneScheduling, spread
from tests.support.botocore_cache import share_parsed_data
from tests.terraform.stack import REGISTRY, STACKS, Applied, StackSpec, attach, group

share_parsed_data()  # every process of the run (controller and workers) imports this file first

# The workerinput key that tells xdist workers where the controller publishes the applied stacks.
STACK_DIR = "serverless_retry_stack_dir"
# Fixture scopes whose setup a file's tests share: such a file stays on one worker.
SHARED_SCOPES = {"module", "class", "package"}


def _stack_fixture(spec: StackSpec) -> Callable[..., Applied]:
    @pytest.fixture(scope="session", name=spec.fixture)
    def applied(request: pytest.FixtureRequest) -> Applied:
        if shutil.which("terraform") is None:
            pytest.skip("terraform is not on PATH")
        workerinput: dict[str, Any] | None = getattr(request.config, "workerinput", None)
        if workerinput is not None:
            return attach(spec, Path(workerinput[STACK_DIR]))
        return REGISTRY.get(spec).result()

    return applied


for _spec in STACKS:
    globals()[f"_{_spec.fixture}"] = _stack_fixture(_spec)


@pytest.fixture(scope="session", autouse=True)
def _shared_lambda_code(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every local runtime of the run (in any xdist worker, and the CLI processes tests start)
    unpacks a function's zip, and its workers byte-compile it, once per CodeSha256 rather than once
    per test (SERVERLESS_RETRY_CODE_CACHE; the directories are content-addressed and written
    atomically)."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "lambda-code"
    patch = pytest.MonkeyPatch()
    patch.setenv(CODE_CACHE_VARIABLE, str(root))
    yield
    patch.undo()


def _stacks(item: pytest.Item) -> list[StackSpec]:
    names = set(getattr(item, "fixturenames", ()))
    return [spec for spec in STACKS if spec.fixture in names]


def _group(item: pytest.Item) -> str | None:
    """The xdist group ``item`` must share a worker with, if any:

    - ``stack-<name>``: every test of one applied stack, so they run one after the other (a test
      that changes the stack restores it before the next one looks) next to the single apply;
    - the test file, when its tests share a module- or class-scoped fixture (an emulator, a batch of
      plans, a checkov scan): split across workers, that setup would run once on each of them.
      Session-scoped fixtures are per worker anyway; the terraform tier's ``Runs`` are
      session-scoped so that their tests spread out, each worker computing only its own keys.
    """
    stacks = _stacks(item)
    assert len(stacks) <= 1, f"{item.nodeid} uses two stacks: they would not share a worker"
    if stacks:
        return group(stacks[0])
    info = getattr(item, "_fixtureinfo", None)
    for defs in getattr(info, "name2fixturedefs", {}).values():
        if defs and defs[-1].scope in SHARED_SCOPES:
            return str(_relative(item))
    return None


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("numprocesses", None) and config.getoption("dist", "no") != "loadgroup":
        raise pytest.UsageError("this suite splits across workers with --dist loadgroup only")


def pytest_itemcollected(item: pytest.Item) -> None:
    # Marked as collected, so before xdist appends the groups to the node ids it reports.
    name = _group(item)
    if name is not None:
        item.add_marker(pytest.mark.xdist_group(name))


@pytest.hookimpl(trylast=True)  # after -k/-m deselection: only what will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the tests that use a stack late (in their order), so that the others overlap the applies
    instead of waiting for them, and start those applies (without xdist: here, now); the other tiers
    before them interleaved (tests/scheduling.py's ``spread``).
    The unit tier, hundreds of small tests, comes after them: it keeps the other workers busy while
    the stack groups, about a minute each of mostly waiting, finish."""
    if getattr(config.option, "loadgroup", False):  # an xdist worker: its groups must have reached the ids
        lost = [item.nodeid for item in items if _group(item) and "@" not in item.nodeid]
        if lost:
            raise pytest.UsageError(f"xdist dropped the groups of {lost[:3]}... (pytest-xdist#1386?)")
    late = [item for item in items if _stacks(item)]
    if not config.option.collectonly and not hasattr(config, "workerinput"):
        REGISTRY.start([spec for spec in STACKS if any(spec in _stacks(item) for item in late)])
    moved = set(late)
    # (Queuing the longest units first in their tier was tried: it put the checkov scans and fault runs
    # beside the stacks' applies and the timing-bound integration tests, and fresh-clone runs took
    # 7 min 0 s against 6 min 33 s without it.)
    rest = [item for item in items if item not in moved]
    filler = [item for item in rest if _tier(item) == "unit"]
    # Property tests first (stable): they are the unit tier's long ones (hypothesis, hundreds of
    # examples, up to ~5 s), and one that came last kept a worker busy alone at the end of the run.
    filler.sort(key=lambda item: not _is_property_test(item))
    items[:] = spread([item for item in rest if _tier(item) != "unit"], _tier) + late + filler


def _is_property_test(item: pytest.Item) -> bool:
    """A hypothesis test (``@given``: hypothesis marks the function it wraps)."""
    return bool(getattr(getattr(item, "obj", None), "is_hypothesis_test", False))


def _relative(item: pytest.Item) -> Path:
    return Path(str(item.fspath)).relative_to(Path(str(item.config.rootpath)))


def _tier(item: pytest.Item) -> str:
    """unit, functional, terraform or integration: the directory under tests/."""
    parts = _relative(item).parts
    return parts[1] if len(parts) > 2 else ""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LaneScheduling | None:
    """loadgroup, in lanes: waiting work beside busy work, never on every worker (tests/scheduling.py)."""
    if config.getoption("dist", "no") != "loadgroup":
        return None
    return LaneScheduling(config, log)


def _whole_suite(config: pytest.Config) -> bool:
    """Whether this run is every test of testpaths (``./build.sh test``): no paths, no selection."""
    selecting = ("keyword", "markexpr", "lf", "deselect", "ignore", "ignore_glob", "stepwise")
    return config.args_source == pytest.Config.ArgsSource.TESTPATHS and not any(
        getattr(config.option, name, None) for name in selecting
    )


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """xdist controller running the whole suite: apply every stack now, ~20 s before a worker has
    collected on a fresh clone (the stacks gate their groups, the run's last waiting work). Its tests
    all use them; any other run starts what its collected tests use (below)."""
    config = session.config
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    if config.option.collectonly or not _whole_suite(config):
        return
    REGISTRY.directory(publish=True)  # before any stack exists: its outcome is for the workers
    REGISTRY.start(list(STACKS))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: tell each worker where the applied stacks are published."""
    node.workerinput[STACK_DIR] = str(REGISTRY.directory(publish=True))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """xdist controller: apply the stacks the collected tests use (their group ends their node id)
    as soon as the first worker has collected, while the workers run everything else."""
    REGISTRY.start([spec for spec in STACKS if any(i.endswith("@" + group(spec)) for i in ids)])


def pytest_sessionfinish() -> None:
    REGISTRY.close()
