"""Agents: the list, and one agent's page — an editor that commits to a branch with a message,
the branch's history with each commit's diff (before and after per path), rollback, branches,
merge with its conflicts shown, and a test call from a branch. Same services as the API."""

from __future__ import annotations

import json
import uuid
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from callplane.agent_tests.gate import gate_problems
from callplane.agents import branches, service, wire
from callplane.agents.config import TOOL_TYPES, validate_config
from callplane.agents.diff import diff as diff_configs
from callplane.agents.refs import MAIN
from callplane.agents.schemas import CommitCreate
from callplane.calls import commands
from callplane.calls.schemas import CallCreate
from callplane.dashboard.branch_view import branch_rows, conflict_rows
from callplane.dashboard.forms import fields
from callplane.dashboard.rendering import render
from callplane.dashboard.routing import CurrentPerson, dashboard_router, runtime_of
from callplane.dashboard.tool_editor import (
    Editor,
    edit,
    editor_of_config,
    editor_of_form,
    tools_in,
)
from callplane.dashboard.tool_forms import cards_from_form, error_slots, kinds
from callplane.errors import Conflict, InvalidInput
from callplane.http.deps import SessionDep
from callplane.kit.tenancy import select_owned
from callplane.knowledge.service import list_knowledge_bases
from callplane.models.agents import AgentCommit
from callplane.users.service import Person
from callplane.voices.service import list_voices

router = dashboard_router()
HISTORY = 20
#: The editor's own fields; every other key is edited as JSON beside them.
EDITED = ("prompt", "first_message", "voice_id", "language", "tools")


def _author(person: Person) -> str:
    return f"user:{person.email}"


def _go(request: Request, path: str, **query: str) -> RedirectResponse:
    base = request.scope.get("root_path", "")
    tail = "&".join(f"{k}={quote(v, safe='')}" for k, v in query.items() if v)
    return RedirectResponse(f"{base}{path}{'?' + tail if tail else ''}", 303)


@router.get("/agents")
async def agents_page(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    agents, total = await service.list_agents(
        session, person.organization_id, page=1, page_size=100
    )
    voices = {str(v.id): v.name for v in await list_voices(session, person.organization_id)}
    return render(
        request,
        "agents.html",
        section="agents",
        agents=agents,
        total=total,
        voices=voices,
        error=None,
    )


@router.post("/agents")
async def create(request: Request, session: SessionDep, person: CurrentPerson) -> Response:
    form = await fields(request)
    name = form.get("name", "").strip()
    try:
        if not 1 <= len(name) <= 255:
            raise InvalidInput("name: must be 1 to 255 characters")
        agent, _secret = await service.create_agent(
            session,
            person.organization_id,
            name=name,
            config={},
            message="Created in the dashboard",
            author=_author(person),
        )
    except InvalidInput as exc:
        agents, total = await service.list_agents(
            session, person.organization_id, page=1, page_size=100
        )
        return render(
            request,
            "agents.html",
            422,
            section="agents",
            agents=agents,
            total=total,
            voices={},
            error=exc.message,
        )
    return _go(request, f"/agents/{agent.uuid}", notice="Agent created.")


async def tool_references(session: Any, request: Request, org: int) -> dict[str, list[Any]]:
    """What a tool's form offers to pick from: the organization's tables and knowledge bases."""
    tables = await request.app.state.runtime.catalog.list_tables(session, org)
    bases, _ = await list_knowledge_bases(session, org, page=1, page_size=100)
    return {
        "table": [(t.name, t.name) for t in tables],
        "knowledge_base_id": [(b["id"], b["name"]) for b in bases],
    }


async def _page(
    request: Request,
    session: Any,
    person: Person,
    agent_uuid: uuid.UUID,
    branch: str,
    status: int = 200,
    errors: list[str] | None = None,
    draft: dict[str, str] | None = None,
    notice: str | None = None,
    tools: Editor | None = None,
    merge_conflict: dict[str, Any] | None = None,
) -> Response:
    org = person.organization_id
    agent = await service.get_agent(session, org, agent_uuid)
    shown = await wire.agent_wire(session, org, agent)
    names = [b["name"] for b in shown["branches"]]
    branch = branch if branch in names else MAIN
    head = await service.resolve_ref(session, org, agent.id, branch)
    config = head.config if head else {}
    _, commits, total = await service.list_commits(
        session, org, agent_uuid, branch=branch, page=1, page_size=HISTORY
    )
    parent_ids = {uuid.UUID(c.parents[0]) for c in commits if c.parents}
    parents: dict[str, dict[str, Any]] = {}
    if parent_ids:
        rows = await session.execute(
            select_owned(AgentCommit, org, AgentCommit.id, AgentCommit.config).where(
                AgentCommit.id.in_(list(parent_ids))
            )
        )
        parents = {str(commit_id): cfg for commit_id, cfg in rows}
    history = [
        {
            "commit": c,
            "changes": diff_configs(parents.get(c.parents[0], {}) if c.parents else {}, c.config),
            "is_head": head is not None and c.id == head.id,
        }
        for c in commits
    ]
    gate = None
    if agent.merge_requires_passing_tests and head is not None and branch != MAIN:
        gate = await gate_problems(session, org, agent, head.id)
    others = {k: v for k, v in config.items() if k not in EDITED}
    values = draft or {
        "prompt": config.get("prompt", ""),
        "first_message": config.get("first_message", ""),
        "voice_id": config.get("voice_id", ""),
        "language": config.get("language", ""),
        "settings": json.dumps(others, indent=2, ensure_ascii=False),
        "message": "",
    }
    if tools is None:
        tools = editor_of_form(draft) if draft else editor_of_config(config)
    return render(
        request,
        "agent.html",
        status,
        section="agents",
        agent=shown,
        branch=branch,
        branches=await branch_rows(session, org, agent.id, shown["branches"]),
        head=head,
        history=history,
        total=total,
        values=values,
        voices=await list_voices(session, org),
        errors=errors or [],
        notice=notice or request.query_params.get("notice"),
        tool_types=TOOL_TYPES,
        tool_kinds=kinds(),
        tools=tools,
        references=await tool_references(session, request, org),
        gate=gate,
        merge_conflict=merge_conflict,
    )


@router.get("/agents/{agent_uuid}")
async def agent_page(
    request: Request,
    agent_uuid: uuid.UUID,
    session: SessionDep,
    person: CurrentPerson,
    branch: str = MAIN,
) -> Response:
    return await _page(request, session, person, agent_uuid, branch)


def _json(text: str, label: str) -> Any:
    try:
        return json.loads(text) if text.strip() else None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise InvalidInput(f"{label}: not valid JSON ({where}: {exc.msg})") from None


def _config_of(form: dict[str, str]) -> dict[str, Any]:
    """The config the editor's form describes, not yet validated: that is the API's to do
    (``validate_config``), on commit as on a check."""
    settings = _json(form.get("settings", ""), "Other settings") or {}
    if not isinstance(settings, dict):
        raise InvalidInput("Other settings: must be a JSON object")
    config = {k: v for k, v in settings.items() if k not in EDITED}
    for key in ("prompt", "first_message", "voice_id", "language"):
        if form.get(key, "").strip():
            config[key] = form[key]
    tools = tools_in(form)
    # No tools is no ``tools`` key (as the agent was created), unless the config listed none
    # (``"tools": []``); anything else, even not a list, goes to the validator, which names
    # what is wrong with it.
    if tools is not None and (tools != [] or form.get("tools_listed")):
        config["tools"] = tools
    return config


@router.post("/agents/{agent_uuid}/commit")
async def commit(
    request: Request, agent_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    form = await fields(request)
    branch = form.get("branch", MAIN)
    try:
        made, created = await service.create_commit(
            session,
            person.organization_id,
            agent_uuid,
            CommitCreate(
                branch=branch,
                config=_config_of(form),
                message=form.get("message", "").strip()[:2000] or "Edited in the dashboard",
                expected_head=uuid.UUID(form["expected_head"])
                if form.get("expected_head")
                else None,
            ),
            author=_author(person),
        )
    except (InvalidInput, Conflict) as exc:
        return await _page(
            request, session, person, agent_uuid, branch, 422, exc.errors, draft=form
        )
    notice = "Committed." if created else "Nothing changed: the config equals the head's."
    return _go(request, f"/agents/{agent_uuid}", branch=branch, notice=notice)


@router.post("/agents/{agent_uuid}/tools")
async def edit_tools(
    request: Request, agent_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    """The editor's tools after one edit (add a tool of a kind, remove one, switch between the
    forms and the JSON): only the tools' part for htmx, else the whole page; nothing committed."""
    form = await fields(request)
    branch = form.get("branch", MAIN)
    tools, notice = edit(form, form.get("tools_action", ""))
    status = 422 if tools.errors else 200
    if request.headers.get("HX-Request") == "true":
        await service.get_agent(session, person.organization_id, agent_uuid)
        # htmx swaps only a 2xx answer: the problems are in the part itself.
        return render(
            request,
            "_agent_tools.html",
            agent={"id": str(agent_uuid)},
            tools=tools,
            tool_kinds=kinds(),
            tool_types=TOOL_TYPES,
            references=await tool_references(session, request, person.organization_id),
            tools_notice=notice,
        )
    return await _page(
        request, session, person, agent_uuid, branch, status, draft=form, notice=notice, tools=tools
    )


@router.post("/agents/{agent_uuid}/check")
async def check(
    request: Request, agent_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    """The editor's errors as one types (htmx): the checks a commit makes, committing nothing."""
    form = await fields(request)
    await service.get_agent(session, person.organization_id, agent_uuid)
    cards = cards_from_form(form) if form.get("tools_mode") == "form" else []
    errors: list[str] = []
    try:
        config = validate_config(_config_of(form))
        await service.check_config_references(session, person.organization_id, config)
    except InvalidInput as exc:
        errors = exc.errors
    return render(request, "_config_check.html", errors=errors, slots=error_slots(cards, errors))


@router.post("/agents/{agent_uuid}/rollback")
async def rollback(
    request: Request, agent_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    """A new commit whose config is an older commit's (``revert_to``): history is kept."""
    form = await fields(request)
    branch = form.get("branch", MAIN)
    try:
        target = uuid.UUID(form.get("commit", ""))
        agent = await service.get_agent(session, person.organization_id, agent_uuid)
        found = await service.find_commit(session, person.organization_id, agent.id, target)
        # Named as the history shows it: short id and message, not a bare UUID.
        told = f' ("{found.message.splitlines()[0][:200]}")' if found and found.message else ""
        await service.create_commit(
            session,
            person.organization_id,
            agent_uuid,
            CommitCreate(
                branch=branch, revert_to=target, message=f"Roll back to {str(target)[:8]}{told}"
            ),
            author=_author(person),
        )
    except ValueError:
        return await _page(request, session, person, agent_uuid, branch, 422, ["No such commit"])
    except (InvalidInput, Conflict) as exc:
        return await _page(request, session, person, agent_uuid, branch, 422, exc.errors)
    return _go(request, f"/agents/{agent_uuid}", branch=branch, notice="Rolled back.")


@router.post("/agents/{agent_uuid}/branches")
async def create_branch(
    request: Request, agent_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    form = await fields(request)
    name = form.get("name", "").strip()
    try:
        await branches.create_branch(
            session, person.organization_id, agent_uuid, name, form.get("from", MAIN) or MAIN
        )
    except (InvalidInput, Conflict) as exc:
        return await _page(request, session, person, agent_uuid, MAIN, 422, exc.errors)
    return _go(request, f"/agents/{agent_uuid}", branch=name, notice=f"Branch {name} created.")


@router.post("/agents/{agent_uuid}/merge")
async def merge(
    request: Request, agent_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    form = await fields(request)
    name, into = form.get("branch", ""), form.get("into", MAIN) or MAIN
    try:
        await branches.merge_branch(
            session,
            person.organization_id,
            agent_uuid,
            name,
            into,
            None,
            author=_author(person),
        )
    except (InvalidInput, Conflict) as exc:
        paths = [e.removeprefix("conflict: ") for e in exc.errors if e.startswith("conflict: ")]
        conflict = None
        if paths:
            agent = await service.get_agent(session, person.organization_id, agent_uuid)
            conflict = {
                "branch": name,
                "into": into,
                "rows": await conflict_rows(
                    session, person.organization_id, agent.id, name, into, paths
                ),
            }
            errors = [
                f"{name} cannot be merged into {into}: both changed the same "
                f"{'setting' if len(paths) == 1 else 'settings'} differently. "
                f"Choose the value on {name} (commit it there), then merge again."
            ]
        else:
            errors = [f"Merging {name} into {into} failed: {exc.message}", *exc.errors]
        return await _page(
            request, session, person, agent_uuid, name, 409, errors, merge_conflict=conflict
        )
    return _go(request, f"/agents/{agent_uuid}", branch=into, notice=f"Merged {name} into {into}.")


@router.post("/agents/{agent_uuid}/branches/delete")
async def delete_branch(
    request: Request, agent_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    form = await fields(request)
    try:
        await branches.delete_branch(
            session, person.organization_id, agent_uuid, form.get("branch", "")
        )
    except Conflict as exc:
        return await _page(request, session, person, agent_uuid, MAIN, 409, exc.errors)
    return _go(request, f"/agents/{agent_uuid}", notice="Branch deleted.")


@router.post("/agents/{agent_uuid}/test-call")
async def test_call(
    request: Request, agent_uuid: uuid.UUID, session: SessionDep, person: CurrentPerson
) -> Response:
    """A call on the branch's head, exactly as ``POST /v1/calls`` with ``agent_id`` places it."""
    form = await fields(request)
    branch = form.get("branch", MAIN)
    try:
        params = _json(form.get("params", ""), "Variables") or {}
        body = CallCreate.model_validate(
            {
                "to_number": form.get("to_number", ""),
                "agent_id": str(agent_uuid),
                "agent_branch_name": branch,
                "params": params,
            }
        )
        call = await commands.place_call(session, runtime_of(request), person.organization_id, body)
    except InvalidInput as exc:
        return await _page(request, session, person, agent_uuid, branch, 422, exc.errors)
    except ValueError as exc:  # pydantic's ValidationError
        return await _page(
            request, session, person, agent_uuid, branch, 422, [f"Test call not placed: {exc}"]
        )
    return _go(request, f"/calls/{call.id}")
