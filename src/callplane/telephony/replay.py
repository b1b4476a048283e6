"""A connection whose first frames were already taken (to listen before the conversation starts),
handed on so that the conversation still hears them, first and in order."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from callplane.telephony.base import (
    Brief,
    Connection,
    EndedBy,
    Frame,
    Recording,
    TransferOutcome,
    TransferTarget,
)


class Replayed(Connection):
    # Two calls are never equal because their fields match (the base is a dataclass).
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __init__(self, inner: Connection, heard: Sequence[Frame]) -> None:
        super().__init__(media=inner.media, answered_by=inner.answered_by)
        self.inner = inner
        self._heard = list(heard)

    @property
    def ended_by(self) -> EndedBy | None:
        return self.inner.ended_by

    @ended_by.setter
    def ended_by(self, _value: EndedBy | None) -> None:
        """The inner connection's is the truth; the dataclass initialiser's write is ignored."""

    @property
    def end_reason(self) -> str | None:
        return self.inner.end_reason

    @end_reason.setter
    def end_reason(self, _value: str | None) -> None:
        """As ``ended_by``: the inner connection's is the truth."""

    async def frames(self) -> AsyncIterator[Frame]:
        while self._heard:
            yield self._heard.pop(0)
        async for frame in self.inner.frames():
            yield frame

    async def play(self, frame: Frame) -> None:
        await self.inner.play(frame)

    async def interrupt(self) -> None:
        await self.inner.interrupt()

    async def hangup(self) -> None:
        await self.inner.hangup()

    async def wait_ended(self) -> EndedBy:
        return await self.inner.wait_ended()

    async def recording(self) -> Recording | None:
        return await self.inner.recording()

    async def send_dtmf(self, digits: str) -> None:
        await self.inner.send_dtmf(digits)

    async def transfer(self, target: TransferTarget, brief: Brief | None = None) -> TransferOutcome:
        return await self.inner.transfer(target, brief)

    @property
    def handed_over(self) -> bool:
        return self.inner.handed_over
