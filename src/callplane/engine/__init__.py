"""The call engine (DESIGN §10): workers that move calls through their lifecycle.

    worker.py        Engine: one per worker process; runs the registered worker tasks
    tasks.py         the registry of worker tasks (dispatch, leases, webhook delivery, ...)
    lifecycle.py     every move a call can make, as DESIGN §10's table, and the moves themselves
    batching.py      group commit: the moves of many calls in one transaction
    claim.py         taking enqueued calls of every waiting organization, each one's limit kept
    leases.py        renewing the calls a worker holds; failing those whose worker vanished
    calls.py         placing a claimed call, holding an answered one; inbound calls
    conversation.py  what happens on an answered call (the seam of the turn loop)
    embedded.py      the engine inside ``serve`` (CALLPLANE_WORKER)

Nothing imports this package but ``cli`` and ``app`` (the embedded engine).
"""
