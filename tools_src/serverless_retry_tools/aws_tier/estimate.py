"""What one run of the AWS tier takes: wall time and an estimate of its cost (pure).

The resources themselves cost nothing while idle (queues, functions, on-demand tables, roles, log
groups, schedule groups, topics, a bus, a pipe): the bill is the requests the run makes. So the
estimate counts, per example, the requests its scenario makes with a wide margin (Lambda's SQS
pollers long-poll each mapped queue all the time the stack is up; Terraform's own calls to SQS are
billed requests too), and prices them with :data:`serverless_retry_tools.cost.PRICES` (read from the
AWS pricing pages on :data:`serverless_retry_tools.cost.PRICES_READ_ON`). Services whose price we
did not re-read here (DynamoDB on demand, SNS, EventBridge, Pipes, CloudWatch Logs ingestion) are
costed at an assumed ceiling well above their published rates; the estimate says so. Free tiers are
left out (they only lower the bill). With ``--with-monitoring`` the examples' alarms and dashboards
are deployed too: alarms are billed per alarm-month (time-weighted), dashboards per dashboard-month
beyond the free ones: that line is shown as its worst case.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from serverless_retry_tools.cost import PRICES, PRICES_READ_ON

__all__ = ["EXAMPLES", "Estimate", "ExamplePlan", "estimate", "render"]

# Assumed ceilings (US dollars per million requests / per GB) for services whose price is not in
# serverless_retry_tools.cost: higher than their published on-demand rates, so the sum stays an upper bound.
CEILING_PER_MILLION = 5.0
LOGS_PER_GB = 0.50  # CloudWatch Logs ingestion, standard class
ALARM_MONTH = 0.10  # a standard-resolution metric alarm
DASHBOARD_MONTH = 3.00
HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class ExamplePlan:
    """What the tier does with one example, and what it counts on for the estimate."""

    name: str
    short: str  # the name suffix after the run's prefix
    scenario_minutes: float  # real time of the scenario on AWS, settle and log delivery included
    apply_minutes: float
    destroy_minutes: float
    invocations: int  # Lambda invocations, with a margin
    gb_seconds: float  # Lambda duration, with a margin
    sqs_requests: int  # pollers, sends, deletes and Terraform's calls, with a margin
    scheduler_invocations: int
    other_requests: int  # DynamoDB, SNS, EventBridge, Pipes (priced at the ceiling)
    log_mb: float
    alarms: int  # with --with-monitoring
    dashboards: int  # with --with-monitoring
    what: str


EXAMPLES: tuple[ExamplePlan, ...] = (
    ExamplePlan(
        name="scheduled-retry",
        short="sr",
        # The longest retry is a 960 s Retry-After (over SQS's 900 s, so it goes through the
        # Scheduler); then the queues settle and CloudWatch Logs delivers the last lines.
        scenario_minutes=22,
        apply_minutes=3,
        destroy_minutes=2,
        invocations=600,
        gb_seconds=300.0,
        # Lambda's pollers: up to 5 long polls per 20 s on the queue for ~30 minutes = 450; sends,
        # deletes and the demo's own reads are ~1,000; Terraform's ~500. Doubled.
        sqs_requests=4_000,
        scheduler_invocations=20,
        other_requests=3_000,
        log_mb=5.0,
        alarms=6,
        dashboards=1,
        what="the demo's 100 orders and one malformed envelope: first-time successes, throttles, "
        "timeouts, an exhausted timeout budget, invalid orders, Retry-After above 15 minutes",
    ),
    ExamplePlan(
        name="native-retry",
        short="nr",
        # The fixed release; the crash-after-write orders come back one visibility timeout (180 s) later.
        scenario_minutes=8,
        apply_minutes=3,
        destroy_minutes=2,
        invocations=300,
        gb_seconds=150.0,
        sqs_requests=2_000,
        scheduler_invocations=0,
        other_requests=2_000,
        log_mb=2.0,
        alarms=4,
        dashboards=1,
        what="the native-retry story's orders with the fixed release: each sent twice, resent later, or "
        "crashing after its write; exactly one ledger entry per order",
    ),
    ExamplePlan(
        name="self-healing",
        short="sh",
        # The charge function's budget: 1 + 3 attempts, 10 + 20 + 40 s apart, through the pipe, the
        # bus, the redrive function and one-time schedules.
        scenario_minutes=10,
        apply_minutes=4,
        destroy_minutes=3,
        invocations=300,
        gb_seconds=150.0,
        sqs_requests=2_000,
        scheduler_invocations=100,
        other_requests=3_000,
        log_mb=2.0,
        alarms=8,
        dashboards=1,
        what="five orders and five invoices on two topics: budgets spent, orders healed by a retry, "
        "invoices never retried, the healthy subscriber once each",
    ),
)
FIDELITY_MINUTES = 1.0


@dataclass(frozen=True)
class Line:
    item: str
    dollars: float
    basis: str


@dataclass(frozen=True)
class Estimate:
    examples: tuple[ExamplePlan, ...]
    minutes: float
    lines: tuple[Line, ...]

    @property
    def dollars(self) -> float:
        return sum(line.dollars for line in self.lines)


def estimate(examples: Sequence[ExamplePlan] = EXAMPLES, *, with_monitoring: bool = False) -> Estimate:
    """Wall time (the examples one after the other, then the fidelity checks) and cost lines."""
    minutes = FIDELITY_MINUTES + sum(
        e.apply_minutes + e.scenario_minutes + e.destroy_minutes for e in examples
    )
    invocations = sum(e.invocations for e in examples)
    gb_seconds = sum(e.gb_seconds for e in examples)
    sqs = sum(e.sqs_requests for e in examples)
    scheduler = sum(e.scheduler_invocations for e in examples)
    other = sum(e.other_requests for e in examples)
    log_gb = sum(e.log_mb for e in examples) / 1024
    lines = [
        Line("Lambda requests", invocations * PRICES.lambda_request, f"{invocations:,} invocations"),
        Line(
            "Lambda duration",
            gb_seconds * PRICES.lambda_gb_second_x86,
            f"{gb_seconds:,.0f} GB-s at the x86_64 rate (arm64 is cheaper)",
        ),
        Line("SQS requests", sqs * PRICES.sqs_request, f"{sqs:,} requests (pollers, sends, Terraform)"),
        Line("Scheduler invocations", scheduler * PRICES.scheduler_invocation, f"{scheduler:,} invocations"),
        Line(
            "DynamoDB, SNS, EventBridge, Pipes",
            other * CEILING_PER_MILLION / 1e6,
            f"{other:,} requests at an assumed ceiling of ${CEILING_PER_MILLION:.2f} per million",
        ),
        Line(
            "CloudWatch Logs ingestion",
            log_gb * LOGS_PER_GB,
            f"{log_gb * 1024:.0f} MB at ${LOGS_PER_GB:.2f}/GB",
        ),
    ]
    if with_monitoring:
        alarms = sum(e.alarms for e in examples)
        dashboards = sum(e.dashboards for e in examples)
        hours = minutes / 60
        lines.append(
            Line(
                "CloudWatch alarms",
                alarms * ALARM_MONTH * hours / HOURS_PER_MONTH,
                f"{alarms} alarms x {hours:.1f} h of ${ALARM_MONTH:.2f} per alarm-month",
            )
        )
        lines.append(
            Line(
                "CloudWatch dashboards (worst case)",
                dashboards * DASHBOARD_MONTH,
                f"{dashboards} dashboards at ${DASHBOARD_MONTH:.2f} per dashboard-month if none is free",
            )
        )
    return Estimate(tuple(examples), minutes, tuple(lines))


def render(plan: Estimate) -> list[str]:
    """The lines the tier prints before it starts (and when it runs nothing)."""
    out = [
        f"expected wall time: about {plan.minutes:.0f} minutes "
        f"({', '.join(f'{e.name} ~{e.apply_minutes + e.scenario_minutes + e.destroy_minutes:.0f}' for e in plan.examples)}"
        f", fidelity checks ~{FIDELITY_MINUTES:.0f})",
        f"estimated cost: ${plan.dollars:.2f} or less, an ESTIMATE (us-east-1 on-demand prices read "
        f"{PRICES_READ_ON}, free tiers left out, margins on every count; your bill is the authority):",
    ]
    out.extend(f"  {line.item:<36} ${line.dollars:8.4f}  {line.basis}" for line in plan.lines)
    return out
