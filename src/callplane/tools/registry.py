"""Tool types, by the config's ``type`` (DESIGN §15): exactly the types the API accepts (a
contract test compares the two), like polar's ``benefit/registry.py``."""

from __future__ import annotations

from callplane.tools import Tool
from callplane.tools.contact_data import ContactData
from callplane.tools.dtmf import SendDtmf
from callplane.tools.end_call import EndCall
from callplane.tools.function import FunctionTool
from callplane.tools.knowledge import KnowledgeSearch
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
    )
}
