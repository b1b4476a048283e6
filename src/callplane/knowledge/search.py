"""Searching chunks with the database's own full-text engine, behind one function.

A query is what a person or the brain typed: it is never handed to a query language. It is cut
into words (letters and digits), each word is quoted (SQLite) or passed as its own
``plainto_tsquery`` (PostgreSQL), and the words are OR-ed: a chunk holding more of them, and
rarer ones, ranks higher, and a question full of small words ("what is your returns policy")
still finds the chunk about returns. Quotes, ``NEAR``, ``*``, ``-``, ``AND``, parentheses are
then just characters between words, never a syntax error.

- SQLite: FTS5, ranked by BM25 (the ``scope`` column weighs nothing); the score is BM25 negated,
  so higher is better on both databases. English knowledge bases use the porter stemmer; FTS5
  stems nothing else, so other languages match words as written (diacritics folded). BM25
  over every chunk holding a common word cost 180 ms at 100,000 chunks, so the candidates are
  bounded as on PostgreSQL, with FTS5 counting the words (``_sqlite``): no table of counts,
  nothing added to an insert.
- PostgreSQL: the chunk's ``tsvector`` (stemmed in the knowledge base's language where
  PostgreSQL has a configuration for it, else ``simple``), ranked by ``ts_rank_cd``. Ranking
  reads each candidate's vector, so the candidates are bounded (``RANK_BUDGET``): the words of
  the question are looked up in the knowledge base's word counts (migration 0025), and the
  GIN index picks the chunks holding the rarest of them, as many words as fit the budget.
  Chunks holding only common words would rank below those anyway where rarity counts (BM25),
  and a word in a fifth of 100,000 chunks made every search rank 20,000 of them. When every
  word is common, the candidates are chunks holding all of them and chunks holding the rarest.

English stop words are dropped from the query on both, as PostgreSQL's ``english``
configuration does, so both rank on the same words. Scores differ between the two engines;
the order of clear winners does not.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

#: The most words of a query used (the rest adds little and costs each search).
MAX_TERMS = 32
MAX_TERM_CHARS = 64
#: Both databases rank at most about this many chunks per search (``_sqlite``, ``_postgresql``).
RANK_BUDGET = 1_000
_WORD = re.compile(r"[^\W_]+")

#: BCP 47 primary language subtag -> PostgreSQL text search configuration (built in since
#: PostgreSQL 13). Anything else: ``simple`` (words as written).
SEARCH_CONFIGS = {
    "ar": "arabic",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "en": "english",
    "es": "spanish",
    "fi": "finnish",
    "fr": "french",
    "ga": "irish",
    "hu": "hungarian",
    "id": "indonesian",
    "it": "italian",
    "lt": "lithuanian",
    "nb": "norwegian",
    "ne": "nepali",
    "nl": "dutch",
    "nn": "norwegian",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
}

#: Every configuration a knowledge base can name.
KNOWN_CONFIGS = frozenset({*SEARCH_CONFIGS.values(), "simple"})

#: PostgreSQL's English stop words (snowball), so SQLite leaves out what PostgreSQL does.
_STOP_WORDS = """i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which who
    whom this that these those am is are was were be been being have has had having do does
    did doing a an the and but if or because as until while of at by for with about against
    between into through during before after above below to from up down in out on off over
    under again further then once here there when where why how all any both each few more
    most other some such no nor not only own same so than too very s t can will just don
    should now"""
ENGLISH_STOP_WORDS = frozenset(_STOP_WORDS.split())


def search_config(language: str) -> str:
    """``es``, ``es-US`` -> ``spanish``; a language without a configuration -> ``simple``."""
    return SEARCH_CONFIGS.get(language.split("-", 1)[0].lower(), "simple")


def query_terms(query: str, config: str) -> list[str]:
    terms: list[str] = []
    for word in _WORD.findall(query.casefold()):
        word = word[:MAX_TERM_CHARS]
        if word in terms or (config == "english" and word in ENGLISH_STOP_WORDS):
            continue
        terms.append(word)
        if len(terms) == MAX_TERMS:
            break
    return terms


@dataclass(frozen=True)
class Hit:
    document_uuid: uuid.UUID
    title: str
    text: str
    score: float


async def search_chunks(
    session: AsyncSession,
    organization_id: int,
    knowledge_base_id: int,
    config: str,
    query: str,
    top_k: int,
) -> list[Hit]:
    """The ``top_k`` best chunks of one knowledge base for ``query``, best first."""
    terms = query_terms(query, config)
    if not terms:
        return []
    if session.get_bind().dialect.name == "postgresql":
        rows = await _postgresql(session, organization_id, knowledge_base_id, config, terms, top_k)
    else:
        rows = await _sqlite(session, organization_id, knowledge_base_id, config, terms, top_k)
    # A text statement returns SQLite's uuid as its stored hex: read it back as a uuid.
    return [Hit(_uuid(row[0]), row[1], row[2], round(float(row[3]), 6)) for row in rows]


def _uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


async def _sqlite(
    session: AsyncSession, org: int, kb: int, config: str, terms: list[str], top_k: int
) -> Any:
    table = "knowledge_chunks_fts_english" if config == "english" else "knowledge_chunks_fts_simple"
    scope = f'scope : "k{kb}"'

    def words(numbers: list[int], operator: str) -> str:
        return f" {operator} ".join(f'"{terms[n]}"' for n in numbers)  # no quote: see _WORD

    # Counted first across the whole index, up to the budget: a word of another knowledge
    # base's chunks counts here too, which only makes a word look commoner. Counting inside
    # the knowledge base, exactly, costs several times more, so it is done only when it
    # matters: every word looks common, or the rare ones are all other knowledge bases'.
    counts = await _sqlite_chunks_per_word(session, table, "", terms, RANK_BUDGET + 1)
    for exact in (False, True):
        if exact:
            counts = await _sqlite_chunks_per_word(session, table, f"{scope} AND ", terms, None)
        held = sorted((n for n in range(len(terms)) if counts[n] > 0), key=lambda n: counts[n])
        if not held:  # no chunk holds any of the words
            return []
        rare: list[int] = []
        for n in held:
            if sum(counts[r] for r in rare) + counts[n] > RANK_BUDGET:
                break
            rare.append(n)
        if rare:
            # Only chunks holding a rare word match; BM25 still scores every word of the
            # question, each once: the common ones sit beside the scope, which matches every
            # chunk of the knowledge base and weighs nothing, so a chunk needs none of them.
            common = [n for n in held if n not in rare]
            match = f"{scope} AND body : ({words(rare, 'OR')})"
            if common:
                match += f" AND (body : ({words(common, 'OR')}) OR {scope})"
            rows = await _sqlite_best(session, table, match, None, org, kb, top_k)
            if rows or exact:
                return rows
    # Every word is common: the first of the chunks holding them all and of those holding the
    # rarest, half the budget each (and never fewer than asked for), as on PostgreSQL.
    half = max(RANK_BUDGET // 2, top_k)
    rarest, *others = held
    every = f"{scope} AND " + " AND ".join(f'body : "{terms[n]}"' for n in held)
    some = f'{scope} AND body : "{terms[rarest]}"'
    if others:
        some += f" AND (body : ({words(others, 'OR')}) OR {scope})"
    rows = [
        *await _sqlite_best(session, table, every, half, org, kb, top_k),
        *await _sqlite_best(session, table, some, half, org, kb, top_k),
    ]
    # Both score every word once, so their scores compare; a chunk can be in both.
    best: dict[Any, Any] = {}
    for row in sorted(rows, key=lambda row: (-row[3], row[4])):
        best.setdefault(row[4], row)
    return list(best.values())[:top_k]


async def _sqlite_chunks_per_word(
    session: AsyncSession, table: str, scope: str, terms: list[str], cap: int | None
) -> list[int]:
    """How many of the knowledge base's chunks hold each word, counted by FTS5 itself (its
    tokenizer and stemmer, deletions seen at once), up to ``cap``: a word beyond it is common
    whatever its count, and counting no further keeps this step small."""
    limit = "" if cap is None else f" LIMIT {int(cap)}"
    counts = " UNION ALL ".join(
        f"SELECT {n}, (SELECT count(*) FROM (SELECT 1 FROM {table} "  # noqa: S608 (constants)
        f"WHERE {table} MATCH :m{n}{limit}))"
        for n in range(len(terms))
    )
    values = {f"m{n}": f'{scope}body : "{term}"' for n, term in enumerate(terms)}
    rows = (await session.execute(text(counts).bindparams(**values))).all()
    found = {int(n): int(chunks) for n, chunks in rows}
    return [found.get(n, 0) for n in range(len(terms))]


async def _sqlite_best(
    session: AsyncSession, table: str, match: str, first: int | None, org: int, kb: int, k: int
) -> Any:
    """The ``k`` best chunks matching ``match``, ranked by BM25 inside FTS5; with ``first``,
    only among the first that many matches (FTS5 walks them in rowid order)."""
    bound = ""
    values: dict[str, Any] = {"match": match, "k": k, "org": org, "kb": kb}
    if first is not None:
        last = await session.scalar(
            text(
                f"SELECT rowid FROM {table} WHERE {table} MATCH :match "  # noqa: S608
                "ORDER BY rowid LIMIT 1 OFFSET :skip"
            ).bindparams(match=match, skip=first - 1)
        )
        if last is not None:
            bound, values["last"] = "AND rowid <= :last ", last
    statement = text(
        f"SELECT d.uuid, c.title, c.text, -m.rank, c.id FROM "  # noqa: S608
        f"(SELECT rowid, rank FROM {table} WHERE {table} MATCH :match {bound}"
        "AND rank MATCH 'bm25(0.0, 1.0)' ORDER BY rank, rowid LIMIT :k) AS m "
        "JOIN knowledge_chunks AS c ON c.id = m.rowid "
        "JOIN knowledge_documents AS d ON d.organization_id = c.organization_id "
        "AND d.id = c.document_id "
        "WHERE c.organization_id = :org AND c.knowledge_base_id = :kb "
        "ORDER BY m.rank, c.id"
    ).bindparams(**values)
    return (await session.execute(statement)).all()


async def _postgresql(
    session: AsyncSession, org: int, kb: int, config: str, terms: list[str], top_k: int
) -> Any:
    # The configuration is written into the statement, never bound: a bound text cast to
    # regconfig is not constant (the cast is only stable), so the planner could not fold the
    # query and estimate it, and searches took 3x as long. It is one of our own names.
    name = config if config in KNOWN_CONFIGS else "simple"
    counts = await _chunks_per_word(session, org, kb, name, terms)
    held = sorted((n for n in range(len(terms)) if counts.get(n, 0) > 0), key=lambda n: counts[n])
    if not held:  # no chunk holds any of the words
        return []

    def tsquery(numbers: list[int], operator: str) -> str:
        return f" {operator} ".join(f"plainto_tsquery('{name}'::regconfig, :t{n})" for n in numbers)

    rare: list[int] = []
    for n in held:
        if sum(counts[r] for r in rare) + counts[n] > RANK_BUDGET:
            break
        rare.append(n)
    if rare:
        # Every chunk holding a rare word is ranked; one holding only common words ranks below
        # them on any scoring that weighs rarity (BM25 on SQLite) and is left out.
        candidates = (
            "SELECT c.id, c.search_vector FROM knowledge_chunks AS c "  # noqa: S608
            "WHERE c.organization_id = :org AND c.knowledge_base_id = :kb "
            f"AND c.search_vector @@ ({tsquery(rare, '||')})"
        )
    else:
        # Every word is common: some of the chunks holding them all, and some holding the
        # rarest, half the budget each (and never fewer than asked for).
        candidates = (
            "SELECT c.id, c.search_vector FROM knowledge_chunks AS c WHERE c.id IN ("  # noqa: S608
            "(SELECT id FROM knowledge_chunks WHERE organization_id = :org "
            f"AND knowledge_base_id = :kb AND search_vector @@ ({tsquery(held, '&&')}) "
            "LIMIT :half) UNION "
            "(SELECT id FROM knowledge_chunks WHERE organization_id = :org "
            f"AND knowledge_base_id = :kb AND search_vector @@ ({tsquery(held[:1], '||')}) "
            "LIMIT :half))"
        )
    statement = text(
        f"WITH q AS MATERIALIZED (SELECT {tsquery(held, '||')} AS q), "  # noqa: S608
        f"candidates AS ({candidates}), "
        "best AS (SELECT m.id, ts_rank_cd(m.search_vector, q.q) AS score "
        "FROM candidates AS m CROSS JOIN q ORDER BY score DESC, m.id LIMIT :k) "
        "SELECT d.uuid, c.title, c.text, b.score FROM best AS b "
        "JOIN knowledge_chunks AS c ON c.id = b.id "
        "JOIN knowledge_documents AS d ON d.organization_id = c.organization_id "
        "AND d.id = c.document_id "
        "ORDER BY b.score DESC, b.id"
    )
    values: dict[str, Any] = {f"t{n}": terms[n] for n in held}
    if not rare:
        values["half"] = max(RANK_BUDGET // 2, top_k)
    statement = statement.bindparams(org=org, kb=kb, k=top_k, **values)
    return (await session.execute(statement)).all()


async def _chunks_per_word(
    session: AsyncSession, org: int, kb: int, name: str, terms: list[str]
) -> dict[int, int]:
    """How many of the knowledge base's chunks hold each word (migration 0025 counts them);
    a word PostgreSQL reads as several lexemes is held at most as often as its rarest."""
    values = ", ".join(f"({n}, :t{n})" for n in range(len(terms)))
    # One index lookup per lexeme, as a subquery: a join would let a planner without
    # statistics on the counts (a new table) hash all of the knowledge base's words.
    statement = text(
        "SELECT w.n, min(coalesce((SELECT t.chunks FROM knowledge_chunks_fts_terms AS t "  # noqa: S608
        "WHERE t.organization_id = :org AND t.knowledge_base_id = :kb "
        "AND t.lexeme = l.lexeme), 0)) "
        f"FROM (VALUES {values}) AS w (n, word) CROSS JOIN LATERAL "
        f"unnest(tsvector_to_array(to_tsvector('{name}'::regconfig, w.word))) AS l (lexeme) "
        "GROUP BY w.n"
    ).bindparams(org=org, kb=kb, **{f"t{n}": term for n, term in enumerate(terms)})
    return {int(n): int(chunks) for n, chunks in (await session.execute(statement)).all()}
