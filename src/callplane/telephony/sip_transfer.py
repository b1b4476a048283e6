"""Cold transfer over SIP (docs/tools.md#transfers): REFER (RFC 3515) on the call's dialog, with
``X-Callplane-Screen-Pop``, then the far end's progress NOTIFYs (``Event: refer``, a sipfrag
status line). Accepted when the REFER is answered 2xx and a NOTIFY reports a 2xx; refused on a
REFER error (405 from a peer that does not transfer), a failing NOTIFY, or no word in time.

``SipAdapter`` owns one ``Referrals``: it feeds it the REFER responses and the NOTIFY progress it
receives; ``SipConnection.transfer`` asks it to refer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from aiosipua import SipRequest, SipResponse, SipUAC
from aiosipua.dialog import Dialog

from callplane.telephony.base import TransferOutcome, TransferTarget

#: How long the far end has to answer the REFER, then to report the transfer's outcome.
REFER_ANSWER_SECONDS = 32.0
TRANSFER_RESULT_SECONDS = 60.0
SCREEN_POP_HEADER = "X-Callplane-Screen-Pop"


@dataclass
class Referrals:
    """REFERs of ours waiting for their answer and outcome, by Call-ID."""

    _answers: dict[str, asyncio.Future[tuple[int, str]]] = field(default_factory=dict)
    _outcomes: dict[str, asyncio.Future[tuple[int, str]]] = field(default_factory=dict)

    def on_response(self, response: SipResponse) -> None:
        """A response to one of our requests: the REFER's final answer settles its wait."""
        cseq = response.cseq
        if cseq is None or cseq.method.upper() != "REFER" or response.status_code < 200:
            return
        waiting = self._answers.pop(response.call_id or "", None)
        if waiting is not None and not waiting.done():
            waiting.set_result((response.status_code, response.reason_phrase or ""))

    def on_progress(self, call_id: str, status: int, reason: str) -> None:
        """A NOTIFY's sipfrag status (``SipUAS.on_transfer_progress``)."""
        if status < 200:
            return
        waiting = self._outcomes.pop(call_id, None)
        if waiting is not None and not waiting.done():
            waiting.set_result((status, reason))

    async def refer(
        self,
        uac: SipUAC,
        dialog: Dialog,
        remote: tuple[str, int],
        refer_to: str,
        target: TransferTarget,
        on_sent: Callable[[SipRequest], None] | None = None,
    ) -> TransferOutcome:
        """Refer the far end of ``dialog`` to ``refer_to``; ``on_sent`` gets the REFER (to
        retransmit it until answered, as the adapter does every request over UDP)."""
        loop = asyncio.get_running_loop()
        call_id = dialog.call_id
        answered = self._answers[call_id] = loop.create_future()
        outcome = self._outcomes[call_id] = loop.create_future()
        try:
            request = uac._send_in_dialog(
                dialog,
                "REFER",
                remote,
                extra_headers={
                    "Refer-To": f"<{refer_to}>",
                    SCREEN_POP_HEADER: target.screen_pop_token,
                },
            )
            if on_sent is not None:
                on_sent(request)
            try:
                status, reason = await asyncio.wait_for(answered, REFER_ANSWER_SECONDS)
            except TimeoutError:
                return TransferOutcome(False, "the transfer was not answered")
            if status >= 300:
                return TransferOutcome(False, f"refused ({status} {reason})".strip())
            try:
                status, reason = await asyncio.wait_for(outcome, TRANSFER_RESULT_SECONDS)
            except TimeoutError:
                return TransferOutcome(False, "the destination did not answer")
            if status >= 300:
                return TransferOutcome(False, f"the destination answered {status} {reason}".strip())
            return TransferOutcome(True, leg_call_id=call_id)
        finally:
            self._answers.pop(call_id, None)
            self._outcomes.pop(call_id, None)


def refer_to_uri(target: TransferTarget, trunk_host: str | None, trunk_port: int) -> str | None:
    """A SIP URI as configured, or a number through the trunk; None when neither can be."""
    if target.sip:
        return target.sip
    if target.number and trunk_host:
        port = "" if trunk_port == 5060 else f":{trunk_port}"
        return f"sip:{target.number}@{trunk_host}{port}"
    return None
