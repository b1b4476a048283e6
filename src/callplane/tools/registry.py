"""Tool kinds, by the config's ``type``, like polar's ``benefit/registry.py``. This is the one
list: the agent config accepts exactly these types (``config_union``), and the engine runs
them. A new kind is one module (its config model beside its ``Tool`` class) and one line here."""

from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import Field

from callplane.tools import Tool
from callplane.tools.contact_data import ContactData
from callplane.tools.dtmf import SendDtmf
from callplane.tools.end_call import EndCall
from callplane.tools.function import FunctionTool
from callplane.tools.knowledge import KnowledgeSearch
from callplane.tools.opt_out import OptOut
from callplane.tools.switch_language import SwitchLanguage
from callplane.tools.tables import InsertRecord, QueryTable
from callplane.tools.transfer import TransferCall

TOOL_TYPES: dict[str, type[Tool]] = {
    kind.type: kind
    for kind in (
        EndCall,
        TransferCall,
        SendDtmf,
        ContactData,
        QueryTable,
        InsertRecord,
        FunctionTool,
        KnowledgeSearch,
        OptOut,
        SwitchLanguage,
    )
}


def config_union() -> Any:
    """The agent config's tool: one of the kinds' config models, chosen by ``type``."""
    models = tuple(kind.config_model for kind in TOOL_TYPES.values() if kind.config_model)
    return Annotated[Union[models], Field(discriminator="type")]  # noqa: UP007
