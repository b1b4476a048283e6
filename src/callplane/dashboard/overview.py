"""The overview (the dashboard's first page): the last two weeks of the organization's calls as
charts, and outcomes compared per agent commit ("did the change on this branch do better?").

Each figure is one query over an index that starts with the organization: calls by
``(organization_id, created_at)``, call events by ``(organization_id, type, at)`` and webhook
attempts by ``(organization_id, created_at)`` (migration 0015). Percentiles and analyzer answers
are computed here from the rows those return.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import String, case, desc, func
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from callplane.dashboard import charts
from callplane.dashboard.call_agents import commit_labels
from callplane.dashboard.call_tools import TOOL_EVENT
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router, runtime_of
from callplane.http.deps import SessionDep
from callplane.kit.tenancy import select_owned
from callplane.models.base import utcnow
from callplane.models.calls import TERMINAL_STATUSES, Call, CallEvent
from callplane.models.webhooks import WebhookDelivery
from callplane.observability import turns

router = dashboard_router()

DAYS = 14
#: Calls that were dialled (or rang in): the answer rate's denominator.
DIALLED = tuple(s for s in TERMINAL_STATUSES if s != "cancelled")
PHASES = ("end_of_turn", "recognition", "first_token", "first_audio", "total")
TURN_EVENT = "agent.turn_latency"
#: The most recent turn measurements the percentiles are computed from.
MOST_TURNS = 20_000
COMMITS = 8


@dataclass
class CommitOutcomes:
    commit: str
    calls: int
    answered: int
    average_duration: float | None
    transferred: int
    answers: Counter[str] = field(default_factory=Counter)

    @property
    def answer_rate(self) -> float | None:
        return self.answered / self.calls if self.calls else None


@router.get("/overview")
async def overview_page(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    org = person.organization_id
    today = utcnow().replace(hour=0, minute=0, second=0, microsecond=0)
    since = today - timedelta(days=DAYS - 1)
    days = [(since + timedelta(days=n)).strftime("%Y-%m-%d") for n in range(DAYS)]
    per_day = await calls_per_day(session, org, since, days)
    dialled, answered, duration = await answering(session, org, since)
    latency = await turn_latency(session, org, since)
    tools = await event_outcomes(session, org, since, TOOL_EVENT)
    hooks = await webhook_failures(session, org, since)
    commits = await outcomes_by_commit(session, org, since)
    labels = await commit_labels(session, org, [c.commit for c in commits])
    columns = [name for name, _ in sum((c.answers for c in commits), Counter()).most_common(4)]
    goal = runtime_of(request).settings.turn_latency_goal_ms
    return render(
        request,
        "overview.html",
        section="overview",
        days=DAYS,
        calls_chart=charts.stacked_bars(days, per_day, title="Calls per day by outcome"),
        outcomes=list(per_day),
        colour=charts.colour,
        total_calls=sum(sum(v) for v in per_day.values()),
        answer_rate=answered / dialled if dialled else None,
        average_duration=duration,
        latency=latency,
        latency_chart=charts.paired_bars(
            list(PHASES),
            {"p50": [latency[p][0] for p in PHASES], "p95": [latency[p][1] for p in PHASES]},
            title="Turn latency p50 and p95 by phase (ms)",
            unit="ms",
            goal=float(goal),
        ),
        goal=goal,
        tools=tools,
        tools_chart=charts.rate_bar(_rate(tools), title="Tool call failure rate"),
        hooks=hooks,
        hooks_chart=charts.rate_bar(_rate(hooks), title="Webhook failure rate"),
        commits=commits,
        labels=labels,
        answer_columns=columns,
    )


def _rate(counts: tuple[int, int]) -> float | None:
    total, failed = counts
    return failed / total if total else None


def _day(session: AsyncSession) -> Any:
    """The UTC day of a call's creation as YYYY-MM-DD, on either database."""
    if session.get_bind().dialect.name == "postgresql":
        return func.to_char(func.timezone("UTC", Call.created_at), "YYYY-MM-DD")
    return func.substr(Call.created_at, 1, 10, type_=String)  # naive UTC text on SQLite


async def calls_per_day(
    session: AsyncSession, org: int, since: datetime, days: list[str]
) -> dict[str, list[int]]:
    day = _day(session).label("day")
    rows = await session.execute(
        select_owned(Call, org, day, Call.status, func.count())
        .where(Call.created_at >= since)
        .group_by(day, Call.status)
    )
    index = {d: i for i, d in enumerate(days)}
    series: dict[str, list[int]] = {}
    for when, status, count in rows:
        if when in index:
            series.setdefault(status, [0] * len(days))[index[when]] += count
    order = [*DIALLED, "in_progress", "dialing", "enqueued", "cancelled"]
    return dict(sorted(series.items(), key=lambda s: order.index(s[0]) if s[0] in order else 99))


async def answering(
    session: AsyncSession, org: int, since: datetime
) -> tuple[int, int, float | None]:
    """(calls dialled or rung in, of them answered, their average duration in seconds)."""
    answered = Call.started_at.is_not(None)
    row = (
        await session.execute(
            select_owned(
                Call,
                org,
                func.sum(case((Call.status.in_(DIALLED), 1), else_=0)),
                func.sum(case((Call.status.in_(DIALLED) & answered, 1), else_=0)),
                func.avg(case((answered & (Call.status == "completed"), Call.duration))),
            ).where(Call.created_at >= since)
        )
    ).one()
    return int(row[0] or 0), int(row[1] or 0), float(row[2]) if row[2] is not None else None


async def turn_latency(
    session: AsyncSession, org: int, since: datetime
) -> dict[str, tuple[float | None, float | None]]:
    """(p50, p95) in milliseconds per phase, over the most recent turns."""
    rows = await session.scalars(
        select_owned(CallEvent, org, CallEvent.data)
        .where(CallEvent.type == TURN_EVENT, CallEvent.at >= since)
        .order_by(desc(CallEvent.at))
        .limit(MOST_TURNS)
    )
    values: dict[str, list[float]] = {p: [] for p in PHASES}
    for data in rows:
        for phase in PHASES:
            value = data.get(f"{phase}_ms") if isinstance(data, dict) else None
            if isinstance(value, int | float):
                values[phase].append(float(value))
    return {p: (_percentile(v, 0.5), _percentile(v, 0.95)) for p, v in values.items()}


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


async def event_outcomes(
    session: AsyncSession, org: int, since: datetime, type_: str
) -> tuple[int, int]:
    """(events of ``type_``, of them with ``outcome`` other than ok): tool calls."""
    rows = await session.scalars(
        select_owned(CallEvent, org, CallEvent.data).where(
            CallEvent.type == type_, CallEvent.at >= since
        )
    )
    outcomes = [d.get("outcome") if isinstance(d, dict) else None for d in rows]
    return len(outcomes), sum(1 for o in outcomes if o != "ok")


async def webhook_failures(session: AsyncSession, org: int, since: datetime) -> tuple[int, int]:
    """(delivery attempts, of them failed)."""
    row = (
        await session.execute(
            select_owned(
                WebhookDelivery,
                org,
                func.count(),
                func.sum(case((WebhookDelivery.delivered.is_(False), 1), else_=0)),
            ).where(WebhookDelivery.created_at >= since)
        )
    ).one()
    return int(row[0] or 0), int(row[1] or 0)


async def outcomes_by_commit(
    session: AsyncSession, org: int, since: datetime
) -> list[CommitOutcomes]:
    """The most recently used agent commits: answer rate, duration, transfers, and how often
    each analyzer answer ("booked: yes") came out, commit against commit."""
    rows = await session.execute(
        select_owned(
            Call,
            org,
            Call.agent_commit_id,
            Call.started_at,
            Call.status,
            Call.duration,
            Call.transferred,
            Call.analysis_results,
            Call.created_at,
        ).where(Call.created_at >= since, Call.agent_commit_id.is_not(None))
    )
    commits: dict[str, CommitOutcomes] = {}
    latest: dict[str, datetime] = {}
    durations: dict[str, list[int]] = {}
    for commit, started, status, duration, transferred, results, created in rows:
        entry = commits.setdefault(commit, CommitOutcomes(commit, 0, 0, None, 0))
        entry.calls += 1
        entry.answered += started is not None
        entry.transferred += bool(transferred)
        if status == "completed" and started is not None and duration is not None:
            durations.setdefault(commit, []).append(duration)
        latest[commit] = max(latest.get(commit, created), created)
        for label in _answers(results):
            entry.answers[label] += 1
    for commit, values in durations.items():
        commits[commit].average_duration = sum(values) / len(values)
    recent = sorted(commits, key=lambda c: latest[c], reverse=True)[:COMMITS]
    return [commits[c] for c in recent]


def call_turn_latencies(
    events: Sequence[CallEvent], transcript: list[dict[str, Any]]
) -> dict[int, dict[str, Any]]:
    """The call page's latency per agent line (``observability.turns``): the call's
    ``agent.turn_latency`` events, placed on the transcript by their timestamps."""
    measured = [e.data for e in events if e.type == TURN_EVENT and isinstance(e.data, dict)]
    return turns.by_transcript_line(transcript, measured)


def _answers(results: Any) -> list[str]:
    """Analyzer answers worth comparing: yes/no fields and short text values."""
    labels = []
    for result in results if isinstance(results, list) else []:
        value = result.get("result") if isinstance(result, dict) else None
        for key, answer in value.items() if isinstance(value, dict) else ():
            if answer is True:
                labels.append(f"{key}: yes")
            elif isinstance(answer, str) and len(answer) <= 24:
                labels.append(f"{key}: {answer}")
    return labels
