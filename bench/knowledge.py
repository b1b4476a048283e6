"""Benchmark: knowledge search (docs/knowledge.md) at 10,000 and 100,000 chunks, on SQLite and
PostgreSQL, and what ``knowledge.auto`` adds to a turn.

    .venv/bin/python bench/knowledge.py [--sizes 10000 100000] [--queries 300]
        [--backends sqlite postgresql] [--pg postgresql://postgres@127.0.0.1:5432/postgres]

For each backend and size: a fresh database (a temp SQLite file; a PostgreSQL database created
and dropped), migrated; one organization and one English knowledge base filled through the
service the API uses (``knowledge.service.add_document``) with generated prose: sentences of
8-20 words drawn from a 5,000-word vocabulary with a Zipf-Mandelbrot distribution (the
commonest word in about a fifth of the chunks), a third of them English function words, cut
into chunks of about 1,000 characters by the real chunker. Then:

- ``search``: ``knowledge.search.search_chunks`` (the search itself, in an open session), top 5,
  for questions of 3-6 vocabulary words drawn from the same distribution ("what is the ...?");
- ``auto``: ``tools.knowledge.consult``, all that ``knowledge.auto`` runs before the brain is
  asked on a caller turn (a session of its own, the knowledge base looked up, the search, the
  result shaped for the brain) -- the time it adds to the turn.

Prints p50 / p95 in milliseconds. The goals of issue 39: search p50 <= 15 ms at 10,000 chunks
on SQLite, auto <= 20 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from sqlalchemy import text  # noqa: E402

from callplane.knowledge import service  # noqa: E402
from callplane.knowledge.chunking import Section  # noqa: E402
from callplane.knowledge.extraction import Extracted  # noqa: E402
from callplane.knowledge.search import search_chunks  # noqa: E402
from callplane.migrate import upgrade  # noqa: E402
from callplane.orgs.service import create_organization  # noqa: E402
from callplane.runtime import Runtime  # noqa: E402
from callplane.settings import Settings  # noqa: E402
from callplane.tools import knowledge  # noqa: E402

FUNCTION_WORDS = ["the", "a", "of", "to", "and", "in", "is", "for", "on", "with", "that", "it"]
QUESTION = ["what is the", "how do I", "can you tell me about", "when does the", "is there a"]
CHUNKS_PER_DOCUMENT = 100


def vocabulary(rng: random.Random, size: int = 5_000) -> list[str]:
    consonants, vowels = "bcdfghklmnprstvz", "aeiou"
    words: set[str] = set()
    while len(words) < size:
        syllables = rng.randint(2, 4)
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables)))
    return sorted(words)


class Prose:
    def __init__(self, seed: int = 39) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng)
        # Zipf-Mandelbrot (rank + 100): the head of a content vocabulary once function words
        # are set apart: the commonest word is in about a fifth of the chunks, as "order" or
        # "policy" would be in a shop's documents; plain Zipf would put it in every chunk.
        weights = [1 / (rank + 100) for rank in range(len(self.words))]
        self.cumulative = list(_accumulate(weights))

    def word(self) -> str:
        return self.rng.choices(self.words, cum_weights=self.cumulative)[0]

    def sentence(self) -> str:
        out = []
        for _ in range(self.rng.randint(8, 20)):
            out.append(self.rng.choice(FUNCTION_WORDS) if self.rng.random() < 0.35 else self.word())
        return " ".join(out).capitalize() + "."

    def section(self, characters: int) -> str:
        text: list[str] = []
        size = 0
        while size < characters:
            sentence = self.sentence()
            text.append(sentence)
            size += len(sentence) + 1
        return " ".join(text)

    def question(self) -> str:
        words = " ".join(self.word() for _ in range(self.rng.randint(3, 6)))
        return f"{self.rng.choice(QUESTION)} {words}?"


def _accumulate(values: list[float]) -> list[float]:
    total, out = 0.0, []
    for value in values:
        total += value
        out.append(total)
    return out


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def fill(runtime: Runtime, chunks: int, prose: Prose) -> tuple[int, object]:
    async with runtime.db.session(write=True) as session:
        org = await create_organization(session, "Bench")
        base = await service.create_knowledge_base(session, org.id, name="Bench", language="en")
        await session.commit()
    made = 0
    while made < chunks:
        count = min(CHUNKS_PER_DOCUMENT, chunks - made)
        # One heading per chunk-sized section: the chunker then makes exactly one chunk each.
        sections = [Section((f"Part {made + n}",), prose.section(900)) for n in range(count)]
        async with runtime.db.session(write=True) as session:
            document = await service.add_document(
                session,
                org.id,
                base,
                Extracted(None, sections),
                title=f"Document {made}",
                url=None,
                content_type="text/plain",
            )
            await session.commit()
        made += document.chunk_count
    return org.id, base


async def measure(url: str, chunks: int, queries: int) -> dict[str, float]:
    settings = Settings(_env_file=None, database_url=url, worker="off")  # type: ignore[call-arg]
    runtime = Runtime.build(settings)
    try:
        await upgrade(runtime.db)
        prose = Prose()
        began = time.perf_counter()
        organization_id, base = await fill(runtime, chunks, prose)
        filled = time.perf_counter() - began
        if url.startswith("postgresql"):
            # What autovacuum does after a bulk load (statistics, hint bits, visibility map),
            # so searches are not timed while they set hint bits on every freshly written row.
            async with runtime.db.engine.connect() as conn:
                auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
                await auto.execute(text("VACUUM ANALYZE knowledge_chunks"))
        questions = [prose.question() for _ in range(queries)]
        search: list[float] = []
        found = 0
        async with runtime.db.session(write=False) as session:
            for question in questions[:20]:  # warm the caches and the plans
                await search_chunks(session, organization_id, base.id, "english", question, 5)  # type: ignore[attr-defined]
            for question in questions:
                start = time.perf_counter()
                hits = await search_chunks(
                    session,
                    organization_id,
                    base.id,
                    "english",
                    question,
                    5,  # type: ignore[attr-defined]
                )
                search.append((time.perf_counter() - start) * 1000)
                found += bool(hits)
        settings_of_auto = {"knowledge_base_id": str(base.uuid), "auto": True}  # type: ignore[attr-defined]
        auto: list[float] = []
        for question in questions:
            start = time.perf_counter()
            await knowledge.consult(runtime, organization_id, settings_of_auto, question)
            auto.append((time.perf_counter() - start) * 1000)
        return {
            "fill_s": filled,
            "search_p50": statistics.median(search),
            "search_p95": percentile(search, 95),
            "auto_p50": statistics.median(auto),
            "auto_p95": percentile(auto, 95),
            "found": found / len(questions),
        }
    finally:
        await runtime.db.dispose()


async def on_postgresql(admin_url: str, chunks: int, queries: int) -> dict[str, float]:
    import asyncpg

    name = f"bench_knowledge_{uuid.uuid4().hex[:10]}"
    base, _, _ = admin_url.rpartition("/")
    raw = admin_url.replace("postgresql+asyncpg://", "postgresql://")
    conn = await asyncpg.connect(raw)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    try:
        return await measure(f"{base}/{name}", chunks, queries)
    finally:
        conn = await asyncpg.connect(raw)
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("backend     chunks   fill s  search p50  p95 ms   auto p50  p95 ms  found")
    for backend in args.backends:
        for size in args.sizes:
            if backend == "sqlite":
                with tempfile.TemporaryDirectory() as tmp:
                    result = await measure(f"sqlite:///{tmp}/bench.db", size, args.queries)
            else:
                result = await on_postgresql(args.pg, size, args.queries)
            print(
                f"{backend:<10} {size:>7,} {result['fill_s']:>8.1f} "
                f"{result['search_p50']:>10.2f} {result['search_p95']:>7.2f} "
                f"{result['auto_p50']:>10.2f} {result['auto_p95']:>7.2f} "
                f"{result['found']:>6.0%}",
                flush=True,
            )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    asyncio.run(main())
