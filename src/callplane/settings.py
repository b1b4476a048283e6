"""Configuration, read from CALLPLANE_* environment variables (or a .env file).

Settings are built once and passed in (to ``create_app``, to CLI commands); nothing reads the
environment at import time, so tests can run many differently configured apps in one process.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator
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
    #: Browser origins allowed to call the API (comma-separated, or *); empty: none.
    cors_origins: str = ""
    #: Reverse proxies (IPs or CIDRs, comma-separated) whose X-Forwarded-For names the client.
    trusted_proxies: str = ""
    # The agent's brain (docs/engine-core.md); unset base URL: the agent speaks first_message and
    # listens.
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_timeout_seconds: float = 20.0
    #: Without a base URL, ``serve`` and ``doctor`` look for an OpenAI-compatible server on these
    #: local ports (Ollama, llama.cpp's server, LM Studio); empty: never look.
    llm_discover_ports: str = "11434,8080,1234"
    #: Judges agent tests' criteria and plays their callers; unset: the brain's model.
    judge_model: str | None = None
    # Speech recognition (callplane[speech]): a CTranslate2 Whisper directory; unset uses the
    # model wheel installed by `make install`. 0 threads: CTranslate2's default (all cores).
    whisper_model_dir: str | None = None
    #: ``tiny.en`` (English calls on tiny.en, other languages on ``base``), ``base`` (every call
    #: on the multilingual model), or a model directory for every call (speech/models.py).
    whisper_model: str = Field(default="tiny.en", min_length=1)
    transcriber_threads: int = 0
    # SIP telephony (docs/engine-core.md); see README "Connect a SIP trunk".
    sip_trunk: str | None = None
    sip_listen: str = "127.0.0.1:5060"
    sip_rtp_ports: str = "10000-20000"
    sip_advertised_host: str | None = None
    # Recording uploads (POST /external_calls/{uuid}/recordings,
    # docs/api-contract.md#external-calls): the largest body (413 beyond), the longest decoded audio
    # (a longer leg is `error`), and how long a worker's claim on a leg lasts without renewal (a
    # crashed worker's leg is retried after it).
    max_recording_bytes: int = 512 * 1024 * 1024
    max_recording_seconds: float = 14400.0
    recording_lease_seconds: float = 60.0

    # The call engine (docs/engine-core.md).
    worker: Literal["auto", "embedded", "off"] = "auto"
    telephony: Literal["simulated", "sip"] = "simulated"
    max_concurrent_calls: int = Field(default=10, ge=1)
    ring_timeout_seconds: float = Field(default=30.0, gt=0)
    max_call_seconds: float = Field(default=1800.0, gt=0)
    simulated_call_seconds: float = Field(default=5.0, ge=0)
    #: Lines the simulated person says, one after each line the agent plays (after "Hello?").
    simulated_script: list[str] = []
    #: Calls one worker process holds at once (``callplane worker --concurrency``).
    worker_concurrency: int = Field(default=100, ge=1)
    #: A worker renews its calls' lease every third of this; a call whose lease ran out is failed.
    worker_lease_seconds: float = Field(default=30.0, gt=0)
    #: Idle poll of the queues (PostgreSQL also wakes workers at once with NOTIFY).
    worker_poll_seconds: float = Field(default=0.5, gt=0)
    #: On SIGTERM, how long calls in progress may go on before they are hung up.
    worker_grace_seconds: float = Field(default=30.0, ge=0)
    #: Slots of each worker that campaigns never use, kept for inbound calls.
    inbound_reserve: int = Field(default=0, ge=0)

    # Webhooks (docs/api-contract.md#webhooks).
    webhook_timeout_seconds: float = Field(default=15.0, gt=0)
    webhook_retry_schedule: str = "0,5,300,1800,7200,18000,36000,36000"
    webhook_allow_private_networks: bool = False
    # Voices and end of turn (issue 28); see docs/voices.md.
    #: The engine of calls whose voice names none ("espeak-ng:en-us", "piper:en_US-joe-medium").
    #: Piper's joe voice, installed with callplane (requirements/piper-voice.txt): the first call
    #: a newcomer hears should sound human. Where it is not installed, espeak-ng speaks instead.
    voice_engine: str = "piper:en_US-joe-medium"
    #: A directory of Piper voices (<name>.onnx + <name>.onnx.json), besides installed packages.
    piper_voices_dir: str | None = None
    #: Piper processes per Piper voice in use (each on one thread): a second lets a caller's
    #: first words be made while another call's sentence is (docs/voices.md).
    piper_processes: int = Field(default=1, ge=1, le=8)
    endpointing: Literal["model", "smart", "silence"] = "model"
    end_of_turn_ms_complete: int = Field(default=200, ge=100, le=5000)
    end_of_turn_ms_incomplete: int = Field(default=800, ge=100, le=5000)
    end_of_turn_ms_number: int = Field(default=600, ge=100, le=5000)
    #: Model endpointing, when the voice and the words disagree on whether the turn is over.
    end_of_turn_ms_unsure: int = Field(default=400, ge=100, le=5000)
    #: Ask the brain on a pause's words, before the turn is sure to be over; kept only when the
    #: turn ends on them (docs/voices.md#speculative-reply).
    speculative_reply: bool = True

    @field_validator("voice_engine")
    @classmethod
    def _check_voice_engine(cls, value: str) -> str:
        from callplane.speech.engines import parse_engine

        parse_engine(value)  # its ValueError says what an engine name looks like
        return value

    # Retention (issue 23): call events and webhook deliveries older than this are purged.
    retention_days: int = Field(default=90, ge=1)
    # SIP at scale: Kamailio in front of many workers (issue 26, docs/sip-edge.md).
    #: HOST or HOST:PORT a worker writes into its SDP and Contact (default: the listen address),
    #: so that media flows straight between the caller and this worker, past the proxy.
    sip_advertise: str | None = None
    #: On SIGTERM a worker drains: how long its calls in progress may go on before hung up.
    drain_seconds: float = Field(default=1800.0, ge=0)
    #: A call whose far end sends no RTP for this long is ended (``completed``).
    media_timeout_seconds: float = Field(default=30.0, gt=0)
    # Observability (issue 29, docs/metrics.md): /metrics needs this bearer token (unset: the
    # API does not serve it); a process with a metrics address serves them there too.
    metrics_token: str | None = None
    metrics_listen: str | None = None
    #: The turn latency goal the overview and the alert rules compare the p95 against.
    turn_latency_goal_ms: int = Field(default=1000, gt=0)
    # -- issue 27 (newcomer) --
    #: Webhooks to loopback receivers (127.0.0.1, ::1) only: on for `make run`'s local demo.
    webhook_allow_loopback: bool = False

    @field_validator("public_url")
    @classmethod
    def _strip_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @field_validator("webhook_retry_schedule")
    @classmethod
    def _check_schedule(cls, value: str) -> str:
        try:
            delays = [float(part) for part in value.split(",")]
        except ValueError:
            raise ValueError("must be comma-separated seconds, e.g. 0,5,300") from None
        if not delays or any(d < 0 for d in delays) or delays != sorted(delays):
            raise ValueError("must be non-negative seconds in increasing order")
        return value

    @field_validator("llm_discover_ports")
    @classmethod
    def _ports(cls, value: str) -> str:
        parts = [part.strip() for part in value.split(",") if part.strip()]
        if not all(part.isdigit() and 0 < int(part) < 65536 for part in parts):
            raise ValueError("must be port numbers separated by commas")
        return ",".join(parts)

    @property
    def llm_ports(self) -> list[int]:
        return [int(part) for part in self.llm_discover_ports.split(",") if part]

    @property
    def webhook_retry_delays(self) -> list[float]:
        """Seconds after the first try at which each attempt is made (the first is 0)."""
        return [float(part) for part in self.webhook_retry_schedule.split(",")]

    @field_validator(
        "redis_url",
        "signing_key",
        "s3_endpoint_url",
        "llm_base_url",
        "llm_model",
        "judge_model",
        "llm_api_key",
        "whisper_model_dir",
        "sip_trunk",
        "sip_advertised_host",
        "sip_advertise",
        "metrics_token",
        "metrics_listen",
        "piper_voices_dir",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    # Web calls (issue 28 item 3, docs/web-calls.md). ICE servers, comma-separated URLs (``stun:`` /
    # ``turn:``) or a JSON list of {"urls", "username", "credential"}; empty: host candidates
    # only, so no public STUN server is ever contacted.
    ice_servers: str = ""
    #: A web call whose browser has not connected (ICE and DTLS) this long after the answer ends.
    web_call_connect_seconds: float = Field(default=20.0, gt=0)
    #: A web call in which neither side made a sound for this long is hung up (a microphone left
    #: open in a forgotten tab sends silence for ever).
    web_call_silence_seconds: float = Field(default=120.0, gt=0)
