"""Configuration, read from CALLPLANE_* environment variables (or a .env file).

Settings are built once and passed in (to ``create_app``, to CLI commands); nothing reads the
environment at import time, so tests can run many differently configured apps in one process.
"""

from __future__ import annotations

from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CALLPLANE_", env_file=".env", extra="ignore", frozen=True
    )

    database_url: str = "sqlite:///./callplane.db"
    redis_url: str | None = None
    # Namespace of the rate-limit counters in Redis, so deployments can share one Redis.
    redis_prefix: str = "callplane"
    rate_limit: str = "1200/minute"
    auth_failure_limit: str = "100/minute"
    #: Failed dashboard sign-ins, counted per client address and per account.
    signin_limit: str = "10/minute"
    public_url: str = "http://127.0.0.1:8000"
    signing_key: str | None = None
    storage_url: str = "file://./recordings"
    s3_endpoint_url: str | None = None
    log_level: str = "info"
    max_body_bytes: int = 10 * 1024 * 1024
    contact_purge_interval_seconds: float = 60.0
    # The agent's brain (DESIGN §10); unset base URL: the agent speaks first_message and listens.
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_timeout_seconds: float = 20.0
    # Speech recognition (callplane[speech]): a CTranslate2 Whisper directory; unset uses the
    # model wheel installed by `make install`. 0 threads: CTranslate2's default (all cores).
    whisper_model_dir: str | None = None
    transcriber_threads: int = 0
    # SIP telephony (DESIGN §10); see README "Connect a SIP trunk".
    sip_trunk: str | None = None
    sip_listen: str = "127.0.0.1:5060"
    sip_rtp_ports: str = "10000-20000"
    sip_advertised_host: str | None = None

    @field_validator("public_url")
    @classmethod
    def _strip_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @field_validator(
        "redis_url",
        "signing_key",
        "s3_endpoint_url",
        "llm_base_url",
        "llm_model",
        "llm_api_key",
        "whisper_model_dir",
        "sip_trunk",
        "sip_advertised_host",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value
