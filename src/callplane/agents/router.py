"""Agents, branches and commits (docs/agents.md). Every error in the STATUS shape."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Query
from starlette.responses import Response

from callplane.agents import branches, conversations, service, wire
from callplane.agents.schemas import (
    AgentCreate,
    AgentCreated,
    AgentEnvelope,
    AgentList,
    AgentUpdate,
    BranchCreate,
    BranchEnvelope,
    BranchUpdate,
    CommitCreate,
    CommitEnvelope,
    CommitList,
    ConversationRequest,
    ConversationTurn,
    Deleted,
    Diff,
    MergeRequest,
    ToolsSecret,
)
from callplane.http.deps import CurrentTenant, RuntimeDep, SessionDep
from callplane.http.families import STATUS
from callplane.http.responses import json_response
from callplane.http.routing import family_router
from callplane.kit.pagination import total_pages
from callplane.kit.scopes import AGENTS

router = family_router(STATUS, scopes=AGENTS, tags=["agents"])

Page = Annotated[int, Query(ge=1, le=1_000_000)]
PageSize = Annotated[int, Query(ge=1, le=100)]
BranchName = Annotated[
    str | None,
    Query(min_length=1, max_length=64, description="Only commits reachable from this branch"),
]
CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"description": "Conflict (a head moved, a name is taken, a merge conflict)"}
}


@router.post(
    "/agents",
    response_model=AgentCreated,
    status_code=201,
    summary="Create an agent (branch main with its first commit)",
)
async def create_agent(body: AgentCreate, session: SessionDep, tenant: CurrentTenant) -> Response:
    """Create an agent whose `main` branch holds one commit with `config`. The response carries
    the agent's `tools_secret`, shown only here."""
    agent, secret = await service.create_agent(
        session,
        tenant.organization_id,
        name=body.name,
        config=body.config,
        message=body.message,
        author=service.author_of(tenant),
    )
    shown = await wire.agent_wire(session, tenant.organization_id, agent)
    return json_response({"agent": shown, "tools_secret": secret}, 201)


@router.get("/agents", response_model=AgentList, summary="List agents, by name")
async def list_agents(
    session: SessionDep, tenant: CurrentTenant, page: Page = 1, page_size: PageSize = 20
) -> Response:
    """The organization's agents (archived ones excluded), by name, then id."""
    agents, total = await service.list_agents(
        session, tenant.organization_id, page=page, page_size=page_size
    )
    return json_response(
        {
            "agents": agents,
            "total_count": total,
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages(total, page_size),
        }
    )


@router.get("/agents/{uuid}", response_model=AgentEnvelope, summary="Get an agent")
async def get_agent(uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """The agent with its branches and the config of main's head."""
    agent = await service.get_agent(session, tenant.organization_id, uuid)
    return json_response({"agent": await wire.agent_wire(session, tenant.organization_id, agent)})


@router.patch(
    "/agents/{uuid}", response_model=AgentEnvelope, summary="Rename an agent or set its merge gate"
)
async def rename_agent(
    uuid: uuid.UUID, body: AgentUpdate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Change the agent's name (the name is not versioned) or `merge_requires_passing_tests`:
    while true, merging a branch answers 409 naming each test that did not pass on its head."""
    agent = await service.update_agent(
        session,
        tenant.organization_id,
        uuid,
        name=body.name,
        merge_requires_passing_tests=body.merge_requires_passing_tests,
    )
    return json_response({"agent": await wire.agent_wire(session, tenant.organization_id, agent)})


@router.delete(
    "/agents/{uuid}", response_model=Deleted, summary="Archive an agent", responses=CONFLICT
)
async def archive_agent(uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant) -> Response:
    """Archive the agent: 404 from then on, absent from the list; past calls keep its ids.
    409 while a phone number routes to it."""
    await service.archive_agent(session, tenant.organization_id, uuid)
    return json_response({"success": True})


@router.post(
    "/agents/{uuid}/tools_secret",
    response_model=ToolsSecret,
    status_code=201,
    summary="Rotate the agent's tools secret",
)
async def rotate_tools_secret(
    uuid: uuid.UUID, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """A new secret for signing function-tool requests; the old one stops signing at once."""
    secret = await service.rotate_tools_secret(session, tenant.organization_id, uuid)
    return json_response({"tools_secret": secret}, 201)


@router.post(
    "/agents/{uuid}/commits",
    response_model=CommitEnvelope,
    status_code=201,
    summary="Commit a config to a branch",
    responses={**CONFLICT, 200: {"description": "The config equals the head's: the head"}},
)
async def create_commit(
    uuid: uuid.UUID, body: CommitCreate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Exactly one of `config` (whole), `changes` (JSON Merge Patch over the head's config) or
    `revert_to` (a commit id of this agent). The branch head moves to the new commit; with
    `expected_head` not the current head, 409 and nothing changes."""
    commit, created = await service.create_commit(
        session, tenant.organization_id, uuid, body, author=service.author_of(tenant)
    )
    return json_response({"commit": wire.commit_wire(commit, uuid)}, 201 if created else 200)


@router.get("/agents/{uuid}/commits", response_model=CommitList, summary="Commit history")
async def list_commits(
    uuid: uuid.UUID,
    session: SessionDep,
    tenant: CurrentTenant,
    branch: BranchName = None,
    page: Page = 1,
    page_size: PageSize = 20,
) -> Response:
    """Commits newest first, without their configs; with `branch`, only those reachable from
    its head."""
    agent, commits, total = await service.list_commits(
        session, tenant.organization_id, uuid, branch=branch, page=page, page_size=page_size
    )
    return json_response(
        {
            "commits": [wire.commit_wire(c, agent.uuid, config=False) for c in commits],
            "total_count": total,
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages(total, page_size),
        }
    )


@router.get(
    "/agents/{uuid}/commits/{commit_id}", response_model=CommitEnvelope, summary="Get a commit"
)
async def get_commit(
    uuid: uuid.UUID, commit_id: uuid.UUID, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """One commit with its whole config."""
    agent, commit = await service.get_commit(session, tenant.organization_id, uuid, commit_id)
    return json_response({"commit": wire.commit_wire(commit, agent.uuid)})


@router.get("/agents/{uuid}/diff", response_model=Diff, summary="Diff two refs")
async def diff(
    uuid: uuid.UUID,
    session: SessionDep,
    tenant: CurrentTenant,
    from_: Annotated[
        str,
        Query(alias="from", min_length=1, max_length=64, description="A commit id or branch name"),
    ],
    to: Annotated[
        str, Query(min_length=1, max_length=64, description="A commit id or branch name")
    ],
) -> Response:
    """Changes by JSON Pointer path from one ref (commit id or branch name) to another; tools
    are compared per tool name."""
    changes = await service.diff_refs(session, tenant.organization_id, uuid, from_, to)
    return json_response({"changes": changes})


@router.post(
    "/agents/{uuid}/branches",
    response_model=BranchEnvelope,
    status_code=201,
    summary="Create a branch",
    responses=CONFLICT,
)
async def create_branch(
    uuid: uuid.UUID, body: BranchCreate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """A branch named `name` whose head is `from` (a branch name or commit id; default main)."""
    branch = await branches.create_branch(
        session, tenant.organization_id, uuid, body.name, body.from_
    )
    return json_response({"branch": wire.branch_wire(branch)}, 201)


@router.patch(
    "/agents/{uuid}/branches/{name}",
    response_model=BranchEnvelope,
    summary="Move a branch head",
    responses=CONFLICT,
)
async def move_branch(
    uuid: uuid.UUID, name: str, body: BranchUpdate, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Point the branch at `head` (a commit of this agent): a rollback is one request."""
    branch = await branches.move_branch(
        session, tenant.organization_id, uuid, name, body.head, body.expected_head
    )
    return json_response({"branch": wire.branch_wire(branch)})


@router.post(
    "/agents/{uuid}/branches/{name}/merge",
    response_model=CommitEnvelope,
    summary="Merge a branch into another",
    responses=CONFLICT,
)
async def merge_branch(
    uuid: uuid.UUID, name: str, body: MergeRequest, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Already contained: the head. Fast-forward when possible, else a three-way merge per JSON
    path; paths changed on both sides differently are a 409 naming each path."""
    commit = await branches.merge_branch(
        session,
        tenant.organization_id,
        uuid,
        name,
        body.into,
        body.expected_head,
        author=service.author_of(tenant),
    )
    return json_response({"commit": wire.commit_wire(commit, uuid)})


@router.delete(
    "/agents/{uuid}/branches/{name}",
    response_model=Deleted,
    summary="Delete a branch",
    responses=CONFLICT,
)
async def delete_branch(
    uuid: uuid.UUID, name: str, session: SessionDep, tenant: CurrentTenant
) -> Response:
    """Its commits stay. `main`, or a branch a phone number routes to: 409."""
    await branches.delete_branch(session, tenant.organization_id, uuid, name)
    return json_response({"success": True})


@router.post(
    "/agents/{uuid}/conversations",
    response_model=ConversationTurn,
    summary="A text-only turn against a branch or commit",
    responses={503: {"description": "No language model is configured, or it failed to answer"}},
)
async def converse(
    uuid: uuid.UUID,
    body: ConversationRequest,
    session: SessionDep,
    runtime: RuntimeDep,
    tenant: CurrentTenant,
) -> Response:
    """What the agent says next given the conversation so far: for testing a commit in CI
    before it is merged. Tools are mocked unless `tools` is `run`."""
    turn = await conversations.take_turn(session, runtime, tenant.organization_id, uuid, body)
    return json_response(turn)
