"""Record-Route for the calls we answer (RFC 3261 §12.1.1), which aiosipua 0.7.1 leaves out.

Behind a proxy that record-routes (the Kamailio edge, docs/sip-edge.md) the caller learns its route
set from our 2xx: without the Record-Route copied into it, the caller's BYE skips the proxy's
route and reaches nobody (404 from the proxy). And our own in-dialog requests (BYE, REFER) must
follow the route set, in the INVITE's order, to its first hop.

What aiosipua should change upstream (then this module goes):
- ``Dialog.create_response`` should copy the request's Record-Route into 101-299 answers to an
  INVITE;
- ``create_dialog_from_request`` should keep Record-Route in order for the UAS (it reverses
  it, which is the UAC's rule, §12.1.2);
- ``IncomingCall.hangup`` should send to the first Route's address (loose routing, §16.12),
  else to the remote target, rather than always back to the INVITE's source address.
"""

from __future__ import annotations

from typing import Any

from aiosipua import IncomingCall, SipRequest, SipResponse, parse_address


def keep_record_route(call: IncomingCall) -> None:
    """Fix a new inbound call's dialog: its route set, and the Record-Route of its answers."""
    record_route = [value for value in call.invite.headers.get("record-route") if value]
    if not record_route:
        return
    dialog = call.dialog
    dialog.route_set = list(record_route)
    create_response = dialog.create_response

    def answer_with_record_route(
        request: SipRequest, status_code: int, *args: Any, **kwargs: Any
    ) -> SipResponse:
        response = create_response(request, status_code, *args, **kwargs)
        if request.method.upper() == "INVITE" and 100 < status_code < 300:
            for value in request.headers.get("record-route"):
                response.headers.append("Record-Route", value)
        return response

    # Per call, not on the class: only the dialogs we answered are changed.
    dialog.create_response = answer_with_record_route  # type: ignore[method-assign]


def next_hop(call: IncomingCall) -> tuple[str, int]:
    """Where an in-dialog request of ours goes: the first Route (every proxy we know of does
    loose routing), else the address the INVITE came from."""
    for route in call.dialog.route_set:
        try:
            uri = parse_address(route).uri
        except (ValueError, IndexError):
            continue
        if uri is not None and uri.host:
            return uri.host, uri.port or 5060
    return call.source_addr


def hangup(call: IncomingCall, via: tuple[str, int]) -> tuple[SipRequest, tuple[str, int]] | None:
    """``IncomingCall.hangup`` sent along the route set; the BYE and where it went, or ``None``
    when the dialog is not confirmed."""
    from aiosipua import DialogState

    if call.dialog.state is not DialogState.CONFIRMED:
        return None
    bye = call.dialog.create_request("BYE", via_host=via[0], via_port=via[1])
    call.dialog.terminate()
    destination = next_hop(call)
    if call.transport is not None:
        call.transport.send(bye, destination)
    return bye, destination
