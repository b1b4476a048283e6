"""``callplane voices engines [--json]``: the speech engines a Voice may name here
(docs/voices.md)."""

from __future__ import annotations

from typing import Annotated

import typer

voices_app = typer.Typer(help="Voices the agents speak with.", no_args_is_help=True)


@voices_app.command("engines")
def voices_engines(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
    language: Annotated[
        str | None, typer.Option("--language", help="Only voices of this language (es, es-MX)")
    ] = None,
) -> None:
    """List the installed engines: Piper voices (CALLPLANE_PIPER_VOICES_DIR and voice packages)
    and espeak-ng's voices; a Voice's `engine` is one of these names."""
    from callplane.cli.common import print_json
    from callplane.settings import Settings
    from callplane.speech.engines import list_engines
    from callplane.voices.schemas import Engine

    settings = Settings()
    engines = list_engines(settings, language)
    if as_json:
        print_json([Engine(**vars(e)).model_dump() for e in engines])
        return
    for engine in engines:
        default = "  (default)" if engine.name == settings.voice_engine else ""
        typer.echo(f"{engine.name:<40} {engine.source}{default}")
