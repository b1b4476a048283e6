"""``callplane sip edge-config``: the Kamailio edge in front of many workers (docs/sip-edge.md)."""

from __future__ import annotations

from typing import Annotated

import typer

sip_app = typer.Typer(help="SIP at scale: the Kamailio edge.", no_args_is_help=True)


@sip_app.command("edge-config")
def edge_config(
    listen: Annotated[
        str, typer.Option("--listen", help="The edge's own SIP address, HOST:PORT (UDP)")
    ],
    worker: Annotated[
        list[str],
        typer.Option("--worker", help="A worker's CALLPLANE_SIP_LISTEN, HOST:PORT (repeat it)"),
    ],
) -> None:
    """Print a complete kamailio.cfg dispatching calls round-robin over the workers given."""
    from callplane.cli.common import fail
    from callplane.telephony.sip_edge import edge_address, kamailio_cfg

    try:
        config = kamailio_cfg(edge_address(listen), [edge_address(value) for value in worker])
    except ValueError as exc:
        fail(str(exc))
    typer.echo(config, nl=False)
