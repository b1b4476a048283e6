"""Every Prometheus metric of callplane, defined here and nowhere else (docs/metrics.md lists
them; ``tests/test_metrics_docs.py`` fails when one is missing there).

Labels only ever take values from small fixed sets (a status, a direction, a phase, a route
template, an HTTP or SIP code): never an organization, a number or a call id, so the number of
series stays bounded however many calls and requests there are (``tests/test_metrics.py``).

In multiprocess mode (``PROMETHEUS_MULTIPROC_DIR`` set before the process starts, the same
directory for every API and worker process of a host) each process writes its values to a file
there and any process's ``/metrics`` adds them up (``exposition.py``).

The gauges read from the database at scrape time (``SCRAPE_GAUGES``) describe the shared queue,
not one process: every process answers the same value, so aggregate them with ``max``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from prometheus_client import Counter, Gauge, Histogram

from callplane.models.calls import TERMINAL_STATUSES

if TYPE_CHECKING:
    from callplane.models.calls import Call

#: Seconds: from a few milliseconds (a text turn) to a slow brain or a long recognition.
LATENCY_BUCKETS = (0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
CLAIM_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)

# -- calls -------------------------------------------------------------------------------------

calls_finished = Counter(
    "callplane_calls_finished",
    "Calls that reached a terminal status, by status and direction.",
    ["status", "direction"],
)
calls_in_progress = Gauge(
    "callplane_calls_in_progress",
    "Answered calls whose conversation a worker is holding now.",
    multiprocess_mode="livesum",
)
lease_expirations = Counter(
    "callplane_worker_lease_expirations",
    "Calls failed because the worker holding them stopped renewing their lease.",
)
claim_latency = Histogram(
    "callplane_claim_latency_seconds",
    "From a call's enqueueing to a worker claiming it.",
    buckets=CLAIM_BUCKETS,
)

# -- turns and speech --------------------------------------------------------------------------

#: A turn's latency, from the caller's last frame to the agent's first audio, in consecutive
#: phases (their sum is ``total``): ``turns.py`` says where each begins and ends.
TURN_PHASES = ("end_of_turn", "recognition", "first_token", "first_audio", "total")
turn_latency = Histogram(
    "callplane_turn_latency_seconds",
    "Each answered caller turn's latency, by phase (total: last caller frame to first audio).",
    ["phase"],
    buckets=LATENCY_BUCKETS,
)
recognition_seconds = Histogram(
    "callplane_recognition_seconds",
    "Time spent recognising one stretch of caller audio.",
    buckets=LATENCY_BUCKETS,
)
recognition_audio_seconds = Counter(
    "callplane_recognition_audio_seconds",
    "Length of the caller audio recognised (against callplane_recognition_seconds_sum).",
)

#: kept: the turn ended on the words the brain was asked with early; discarded: it did not.
SPECULATION_OUTCOMES = ("kept", "discarded")
speculative_replies = Counter(
    "callplane_speculative_replies",
    "Replies asked of the brain on a pause's words before the turn was over, by outcome.",
    ["outcome"],
)

# -- brain and tools ---------------------------------------------------------------------------

BRAIN_ERROR_KINDS = ("timeout", "error")
brain_errors = Counter(
    "callplane_brain_errors",
    "Replies the brain failed to give, by kind (timeout or error).",
    ["kind"],
)
tool_calls = Counter(
    "callplane_tool_calls",
    "Tool calls made by agents, by tool type and outcome (ok or error).",
    ["tool_type", "outcome"],
)
tool_duration = Histogram(
    "callplane_tool_duration_seconds",
    "How long each tool call took, by tool type.",
    ["tool_type"],
    buckets=LATENCY_BUCKETS,
)

# -- webhooks ----------------------------------------------------------------------------------

#: delivered: a 2xx; failed: any other answer or none, retried later; abandoned: the last try.
WEBHOOK_OUTCOMES = ("delivered", "failed", "abandoned")
webhook_deliveries = Counter(
    "callplane_webhook_deliveries",
    "Webhook delivery attempts by outcome (delivered, failed, abandoned).",
    ["outcome"],
)
webhook_delivery_duration = Histogram(
    "callplane_webhook_delivery_seconds",
    "How long each webhook delivery attempt took.",
    buckets=HTTP_BUCKETS,
)

# -- SIP and media -----------------------------------------------------------------------------

sip_responses = Counter(
    "callplane_sip_responses",
    "SIP responses sent or received, by code and direction (sent or received).",
    ["code", "direction"],
)
rtp_packets_lost = Counter(
    "callplane_rtp_packets_lost",
    "RTP packets missing from the sequence numbers received.",
)

# -- HTTP --------------------------------------------------------------------------------------

http_requests = Counter(
    "callplane_http_requests",
    "API and dashboard requests by method, route template and status.",
    ["method", "route", "status"],
)
http_duration = Histogram(
    "callplane_http_request_duration_seconds",
    "API and dashboard request duration by method and route template.",
    ["method", "route"],
    buckets=HTTP_BUCKETS,
)

#: Read from the database when scraped (``exposition.py``): name -> help.
SCRAPE_GAUGES = {
    "callplane_calls_queued": "Calls enqueued and waiting to be dialled (all organizations).",
    "callplane_calls_dialing_oldest_seconds": "Age of the oldest call in dialing (0: none).",
    "callplane_webhook_backlog_age_seconds": (
        "How long the oldest due webhook delivery has been waiting (0: none)."
    ),
}

_DIRECTIONS = frozenset({"inbound", "outbound"})
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def method_label(method: str) -> str:
    return method if method in _METHODS else "other"


def code_label(code: int) -> str:
    return str(code) if 100 <= code <= 699 else "other"


# -- hooks: one call each from the code they observe --------------------------------------------


def count_moves(moves: Sequence[tuple[str, bool]], results: Sequence[Call | None]) -> None:
    """The calls that just reached a terminal status (``engine.lifecycle.apply_moves``): each
    move as its target status and whether it was a lease expiring."""
    for (target, lease_expired), call in zip(moves, results, strict=True):
        if call is None or target not in TERMINAL_STATUSES:
            continue
        direction = call.direction if call.direction in _DIRECTIONS else "outbound"
        calls_finished.labels(target, direction).inc()
        if lease_expired:
            lease_expirations.inc()


def count_cancelled(call: Call | None) -> None:
    """A call cancelled through the API (``calls.service.cancel_call``), if it was."""
    if call is not None:
        direction = call.direction if call.direction in _DIRECTIONS else "outbound"
        calls_finished.labels("cancelled", direction).inc()


def observe_claims(calls: Sequence[Call], now: Any) -> None:
    """Claim latency of calls a worker just took (``engine.calls.dispatch``)."""
    for call in calls:
        if call.created_at is not None:
            claim_latency.observe(max(0.0, (now - call.created_at).total_seconds()))


def observe_recognition(pcm_bytes: int, seconds: float) -> None:
    """One recognition of ``pcm_bytes`` of 16-bit mono audio (``engine.conversation.listening``)."""
    from callplane.telephony.base import SAMPLE_RATE, SAMPLE_WIDTH

    recognition_seconds.observe(seconds)
    recognition_audio_seconds.inc(pcm_bytes / (SAMPLE_RATE * SAMPLE_WIDTH))


def count_speculation(kept: bool) -> None:
    """A speculative reply used or thrown away (``engine.conversation.speculation``)."""
    speculative_replies.labels("kept" if kept else "discarded").inc()


def count_brain_error(error: BaseException) -> None:
    timed_out = isinstance(error, TimeoutError) or "timed out" in str(error).lower()
    brain_errors.labels("timeout" if timed_out else "error").inc()


def count_webhook_attempt(
    status_code: int | None, duration_ms: int | None, at: datetime, last: bool
) -> None:
    """One delivery attempt made at ``at`` (``webhooks.delivery``); ``last``: no retry follows
    a failure."""
    from callplane.observability import tracing

    delivered = status_code is not None and 200 <= status_code < 300
    outcome = "delivered" if delivered else ("abandoned" if last else "failed")
    webhook_deliveries.labels(outcome).inc()
    if duration_ms is not None:
        webhook_delivery_duration.observe(duration_ms / 1000)
        tracing.record_wall_span("webhook", at, duration_ms / 1000, outcome=outcome)


def count_tool_call(tool_type: str, ok: bool, seconds: float) -> None:
    """One tool use (``tools.toolbox.Toolbox.use``); ``tool_type`` is the registry's key."""
    tool_calls.labels(tool_type, "ok" if ok else "error").inc()
    tool_duration.labels(tool_type).observe(seconds)


def count_sip_message(message: Any, direction: str) -> None:
    """A SIP message sent or received (``telephony.sip``); only responses are counted."""
    code = getattr(message, "status_code", None)
    if isinstance(code, int):
        sip_responses.labels(code_label(code), "sent" if direction == "sent" else "received").inc()


def count_rtp_stats(stats: dict[str, Any]) -> None:
    """An RTP session's statistics when it closes (``telephony.media``)."""
    lost = stats.get("packets_lost")
    if isinstance(lost, int) and lost > 0:
        rtp_packets_lost.inc(lost)
