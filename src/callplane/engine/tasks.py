"""Every job a worker process runs besides holding calls, imported for real (polar's
``tasks.py``): a domain declares its ``WorkerTask`` against ``jobs.TaskContext`` and never
imports the engine; this module is where the engine learns of it. The engine's own tasks work
on the worker's calls (``Switchboard``), so they are built for it.
"""

from __future__ import annotations

from callplane.agent_tests.task import agent_runs_task
from callplane.audit_log.task import AUDIT_SEAL
from callplane.engine import calls, dialer, leases, retention
from callplane.engine.agent_audio import play_audio
from callplane.engine.switchboard import Switchboard
from callplane.external_calls import transcription
from callplane.jobs import WorkerTask
from callplane.webhooks import delivery


def worker_tasks(board: Switchboard) -> list[WorkerTask]:
    return [
        calls.dispatch_task(board),
        dialer.dialer_task(board),
        leases.leases_task(board),
        delivery.DELIVERY,
        transcription.TRANSCRIPTION,
        retention.RETENTION,
        AUDIT_SEAL,
        agent_runs_task(play_audio),
    ]
