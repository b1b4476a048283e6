"""The three ways a recording may be sent, read as one stream of audio bytes.

- The audio itself with its type (``audio/wav``, ``audio/mpeg``, ``audio/ogg``, ``audio/flac``).
- The audio itself as ``application/octet-stream``: the format is read from its first bytes (what
  generated clients and ``curl --data-binary`` send when told nothing more).
- ``multipart/form-data`` with exactly one file part (``curl -F file=@call.wav``, HTML forms):
  parsed as it streams in, the part's bytes sniffed the same way, its file name kept.

Either way nothing is held in memory beyond the first bytes needed to tell the format.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

from python_multipart.multipart import MultipartParser, parse_options_header

from callplane.errors import InvalidInput
from callplane.external_calls.uploads import CANONICAL_TYPES
from callplane.speech.decoding import media_format, sniff

#: Bytes read ahead to tell a format from its signature (a WAV header needs 12).
_SNIFF_BYTES = 64
ACCEPTED = (
    "audio/wav, audio/mpeg, audio/ogg, audio/flac, application/octet-stream (the format is read "
    "from the audio), or multipart/form-data with one file part"
)


@dataclass
class AudioBody:
    media_type: str
    chunks: AsyncIterator[bytes]
    #: The file name a multipart part carried, if any.
    file_name: str | None = None


def _refuse(message: str, type_: str = "content_type") -> InvalidInput:
    return InvalidInput(message, loc=("header", "content-type"), type_=type_)


def streamable(content_type: str | None) -> bool:
    """Whether the type is one of the two sniffed kinds (checked before the body is read)."""
    kind, _ = parse_options_header(content_type or "")
    return kind in (b"application/octet-stream", b"multipart/form-data")


def unaccepted() -> InvalidInput:
    return _refuse(f"Content-Type must be {ACCEPTED}")


async def open_body(content_type: str | None, chunks: AsyncIterable[bytes]) -> AudioBody:
    """The upload's media type and its audio bytes, or a 422 saying what to send."""
    declared = media_format(content_type)
    if declared is not None:
        return AudioBody(CANONICAL_TYPES[declared], aiter(chunks))
    kind, options = parse_options_header(content_type or "")
    if kind == b"application/octet-stream":
        media_type, audio = await _sniffed(aiter(chunks))
        return AudioBody(media_type, audio)
    if kind == b"multipart/form-data":
        boundary = options.get(b"boundary")
        if not boundary:
            raise _refuse("multipart/form-data needs a boundary parameter")
        part = _FilePart(boundary, aiter(chunks))
        media_type, audio = await _sniffed(part.data())
        return AudioBody(media_type, audio, part.file_name)
    raise unaccepted()


async def _sniffed(chunks: AsyncIterator[bytes]) -> tuple[str, AsyncIterator[bytes]]:
    head = b""
    async for chunk in chunks:
        head += chunk
        if len(head) >= _SNIFF_BYTES:
            break
    found = sniff(head)
    if found is None:
        raise InvalidInput(
            "The audio format could not be told from the file's first bytes: send WAV, MP3, "
            "Ogg or FLAC, or declare it with Content-Type audio/wav, audio/mpeg, audio/ogg "
            "or audio/flac",
            loc=("body",),
            type_="audio_format",
        )

    async def replay() -> AsyncIterator[bytes]:
        if head:
            yield head
        async for chunk in chunks:
            yield chunk

    return CANONICAL_TYPES[found], replay()


class _FilePart:
    """The bytes of the one file part of a multipart body, parsed as the body streams."""

    def __init__(self, boundary: bytes, chunks: AsyncIterator[bytes]) -> None:
        self._chunks = chunks
        self._ready: list[bytes] = []
        self._files = 0
        self._in_file = False
        self._header_name = b""
        self._header_value = b""
        self._headers: dict[bytes, bytes] = {}
        self.file_name: str | None = None
        self._parser = MultipartParser(
            boundary,
            callbacks={
                "on_part_begin": self._part_begin,
                "on_header_field": self._header_field,
                "on_header_value": self._header_value_data,
                "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished,
                "on_part_data": self._part_data,
                "on_part_end": self._part_end,
            },
        )

    def _part_begin(self) -> None:
        self._headers = {}
        self._in_file = False

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _header_value_data(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _header_end(self) -> None:
        self._headers[self._header_name.lower()] = self._header_value
        self._header_name = self._header_value = b""

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        if b"filename" not in options:
            return  # a plain field: ignored
        self._files += 1
        if self._files > 1:
            raise _refuse("Send one file part per upload", type_="multipart_files")
        self._in_file = True
        name = options[b"filename"].decode("utf-8", "replace").rsplit("/", 1)[-1]
        name = name.rsplit("\\", 1)[-1].strip()
        if name and len(name) <= 255 and all(ord(c) >= 0x20 and c != "\x7f" for c in name):
            self.file_name = name

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._in_file:
            self._ready.append(data[start:end])

    def _part_end(self) -> None:
        self._in_file = False

    async def data(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            try:
                self._parser.write(chunk)
            except InvalidInput:
                raise
            except Exception as exc:  # python-multipart's parse errors
                raise InvalidInput(
                    f"The multipart body could not be parsed: {exc}", type_="multipart_invalid"
                ) from None
            ready, self._ready = self._ready, []
            for piece in ready:
                yield piece
            await asyncio.sleep(0)
        if self._files == 0:
            raise _refuse("The multipart body has no file part", type_="multipart_files")
