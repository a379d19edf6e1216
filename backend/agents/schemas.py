"""Bodies of the agents' own endpoints."""

from datetime import datetime

from pydantic import BaseModel, Field

from backend.agents.models import AgentRole
from backend.api.inputs import StorableText


class AgentOut(BaseModel):
    id: int
    name: str
    email: str
    role: AgentRole
    active: bool
    created_at: datetime

    model_config = {"from_attributes": True}


class AgentName(BaseModel):
    """What every agent may know of a colleague: who wrote a reply or a note, who has a conversation."""

    id: int
    name: str
    active: bool

    model_config = {"from_attributes": True}


class AgentIn(BaseModel):
    name: StorableText = Field(min_length=1, max_length=200)
    email: StorableText = Field(min_length=3, max_length=320, pattern=r"^[^@\s]+@[^@\s]+$")
    role: AgentRole = AgentRole.AGENT


class TokenOut(BaseModel):
    id: int
    agent_id: int
    display_prefix: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None

    model_config = {"from_attributes": True}


class NewToken(BaseModel):
    token: str = Field(description="Shown once; only its hash is stored.")
    details: TokenOut


class AgentCreated(BaseModel):
    agent: AgentOut
    token: str = Field(description="Shown once; only its hash is stored.")


class CannedOut(BaseModel):
    id: int
    shortcode: str
    text: str

    model_config = {"from_attributes": True}


class CannedIn(BaseModel):
    shortcode: StorableText = Field(max_length=64, examples=["returns"])
    text: StorableText = Field(min_length=1, max_length=4000)
