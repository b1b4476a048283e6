"""The call engine (docs/engine-core.md): workers that move calls through their lifecycle.

    worker.py        Engine: one per worker process; assembles the parts below and stops them
    runner.py        TaskRunner: what every worker task runs on (``jobs.TaskContext``)
    switchboard.py   the calls a worker holds: telephony, conversation services, group commit
    tasks.py         the worker tasks, imported for real (dispatch, leases, webhook delivery, ...)
    lifecycle.py     every move a call can make, as in docs/engine-core.md, and the moves themselves
    batching.py      group commit: the moves of many calls in one transaction
    claim.py         taking enqueued calls of every waiting organization, each one's limit kept
    leases.py        renewing the calls a worker holds; failing those whose worker vanished
    calls.py         placing a claimed call, holding an answered one; inbound calls
    conversation.py  what happens on an answered call (the seam of the turn loop)
    agent.py         AgentSpec: the agent on one call (settings < commit < the call's fields)
    turn_loop.py     the conversation: turns, barge-in, the ways a call ends
    reply.py         one agent line in flight (heard text, interrupted, await playout)
    listening.py     the agent's ears;  speaking.py  its mouth
    providers.py     a worker's transcriber, synthesizers and brain, built once
    aftercall.py     summary, analyzers and the agent's own events
    retention.py     purging call events and webhook deliveries past CALLPLANE_RETENTION_DAYS
    embedded.py      the engine inside ``serve`` (CALLPLANE_WORKER)

Nothing imports this package but ``cli`` and ``app`` (the embedded engine); domains declare
their worker tasks against ``callplane.jobs`` (tests/test_layers.py holds both rules).
"""
