"""The conversation on one answered call, in its own room (as livekit's ``voice/``):

    session.py      the seam with the engine: the call's context, its agent, the turn loop run
    turn_loop.py    decides: record the turn, start a reply, barge in, hang up
    generation.py   one answer: brain requests and tool rounds, spoken into a reply
    listening.py    media in -> caller events; endpointing.py: when a caller's turn is over
    speaking.py     sentences in -> media out; reply.py: one agent line in flight

Nothing here touches a call's status; the engine (``engine/calls.py``) does.
"""
