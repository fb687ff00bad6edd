"""The Python SDK. ``Flux.connect`` talks to a running service over its REST API (what agents and apps use);
``Flux.embedded`` runs the services inside this process, for scripts and tests, and refuses an instance whose
service is running. Both have the same methods and return the same types.

    from flux.sdk import Flux
    mem = Flux.connect("my-memory", caller="my-agent:chat")      # an instance by name, or a URL
    gid = mem.store("Paris is the capital of France", provenance="user_stated")
    found = mem.retrieve("French capital")
    mem.feedback(found.trace_id, found.grains[0].id, useful=True)

``AsyncFlux.connect`` is the same client for async code.
"""
from __future__ import annotations

import asyncio
import functools
import os
import warnings
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from core.client import DEFAULT_TIMEOUT, LLM_WAIT_SECONDS, RestClient
from core.errors import InvalidInput
from core.validate import require_id
from graph.results import RetrieveResult

URL_ENV, KEY_ENV = "FLUX_URL", "FLUX_API_KEY"


def _caller(caller: str | None) -> tuple[str, str] | None:
    """"client:role" as the header pair (the service checks each part); InvalidInput when it is not of that form."""
    if caller is None:
        return None
    client, colon, role = caller.partition(":") if isinstance(caller, str) else ("", "", "")
    if not (client and colon and role) or ":" in role:
        raise InvalidInput(f"caller {caller!r} is not of the form 'client:role', e.g. 'codex:chat'",
                           details={"field": "caller"})
    return client, role


def _when(value: datetime | str | None) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


class FluxWarning(UserWarning):
    """What the service said beside a store that succeeded (flux_extracts mode: the LLM failed and the text was
    stored as given, or it found no facts)."""


def _stored_ids(answer: dict[str, Any]) -> list[int]:
    """The ids of the grains a store answered: the one stored, or in flux_extracts mode every extracted fact's
    (none when none was found)."""
    if "grain" in answer:
        return [answer["grain"]["id"]]
    return [item["grain"]["id"] for item in answer.get("items") or []]


def _warn(warning: str | None) -> None:
    """What the service said beside a store, raised as a FluxWarning at the caller of ``store_all``."""
    if warning:
        warnings.warn(warning, FluxWarning, stacklevel=3)


def resolve(name_or_url: str | None, api_key: str | None) -> tuple[str, str | None, str]:
    """(base URL, API key, how to start it) for an instance name, a URL, or FLUX_URL / FLUX_API_KEY."""
    from flux.instance import Instance, InstanceError

    target = name_or_url or os.environ.get(URL_ENV)
    if not target:
        raise InstanceError(f"say which Flux Memory to connect to: an instance name, a URL, or {URL_ENV} in the "
                            "environment")
    if target.startswith(("http://", "https://")):
        return target, api_key or os.environ.get(KEY_ENV) or None, "`flux start` where it is served"
    instance = Instance.existing(target)
    key = api_key or str(instance.setting("API_KEY") or "") or os.environ.get(KEY_ENV) or None
    return instance.rest_url(), key, f"`flux start --name {target}`"


class Flux:
    """A client of a running Flux Memory service (see ``connect``)."""

    def __init__(self, client: RestClient, caller: str | None = None, *,
                 store_timeout: float = LLM_WAIT_SECONDS) -> None:
        self.client, self.caller, self.store_timeout = client, caller, store_timeout
        self._who = _caller(caller)

    @classmethod
    def connect(cls, name_or_url: str | None = None, *, api_key: str | None = None, caller: str | None = None,
                timeout: float | None = None, retries: int = 3) -> Flux:
        """Connect to an instance by name (its ``config.yaml`` gives host, port and API_KEY), to a URL, or to
        FLUX_URL (with FLUX_API_KEY). Nothing is sent until the first call. Each call waits ``timeout`` seconds
        for its answer; left unset, DEFAULT_TIMEOUT, and a store LLM_WAIT_SECONDS (it may wait on the
        service's LLM in flux_extracts mode)."""
        url, key, hint = resolve(name_or_url, api_key)
        client = RestClient(url, api_key=key, timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
                            retries=retries, start_hint=hint, user_agent="flux-sdk")
        return cls(client, caller, store_timeout=LLM_WAIT_SECONDS if timeout is None else timeout)

    @staticmethod
    def embedded(data_dir: str | os.PathLike | None = None, *, caller: str | None = None) -> EmbeddedFlux:
        """The services in this process, on the instance in ``data_dir`` (scripts, tests); see EmbeddedFlux."""
        return EmbeddedFlux.open(data_dir, caller=caller)

    def __enter__(self) -> Flux:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()

    def _post(self, path: str, body: Mapping[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        return self.client.post(path, body, caller=self._who, timeout=timeout)

    def _get(self, path: str, **query: Any) -> dict[str, Any]:
        return self.client.get(path, query=query, caller=self._who)

    def store(self, content: str, **fields: Any) -> int | None:
        """Store a fact (provenance, context, occurred_at, restore as ``store_all`` takes them); its grain's id, in
        flux_extracts mode the first fact's (None when the LLM found none)."""
        return next(iter(self.store_all(content, **fields)), None)

    def store_all(self, content: str, *, provenance: str = "ai_stated", context: str = "",
                  occurred_at: datetime | str | None = None, restore: bool = False) -> list[int]:
        """Store ``content``; the ids of every grain it gave: one, or in flux_extracts mode each fact's."""
        body = {"content": content, "provenance": provenance, "context": context,
                "occurred_at": _when(occurred_at), "restore": restore}
        answer = self._post("/store", {k: v for k, v in body.items() if v not in (None, False)},
                            timeout=self.store_timeout)
        _warn(answer.get("warning"))
        return _stored_ids(answer)

    def store_batch(self, items: Sequence[Mapping]) -> list[int]:
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):  # a string is no list
            raise InvalidInput(f"store_batch takes a list of items (objects with 'content'), got "
                               f"{type(items).__name__}", details={"field": "items"})
        items = [({**item, "occurred_at": _when(item.get("occurred_at"))} if "occurred_at" in item else dict(item))
                 if isinstance(item, Mapping) else item for item in items]  # the service names an item that is not
        return [r["grain"]["id"] for r in self._post("/store/batch", {"items": items})["items"]]

    def retrieve(self, query: str, *, limit: int | None = None, include_quarantined: bool = False) -> RetrieveResult:
        body: dict[str, Any] = {"query": query, "include_quarantined": include_quarantined}
        if limit is not None:
            body["limit"] = limit
        return RetrieveResult.from_dict(self._post("/retrieve", body))

    def feedback(self, trace_id: int, grain_id: int, *, useful: bool) -> None:
        self._post("/feedback", {"trace_id": trace_id, "grain_id": grain_id, "useful": useful})

    def grains(self, *, status: str | None = None, limit: int = 50, offset: int = 0) -> list[dict]:
        return self._get("/grains", status=status, limit=limit, offset=offset)["grains"]

    def grain(self, grain_id: int) -> dict:
        """A grain's dossier: conduits, confidence history (why it is believed), traces."""
        return self._get(f"/grains/{require_id(grain_id, 'grain_id')}")

    def relate(self, source_id: int, kind: str, target_id: int, *, note: str = "") -> int:
        """Assert ``source kind target``: supports, contradicts, supersedes (source is newer) or caused_by
        (source is the effect). Returns the relation's conduit id."""
        body = {"source_id": source_id, "target_id": target_id, "kind": kind, **({"note": note} if note else {})}
        return self._post("/relations", body)["relation"]["id"]

    def relations(self, *, kind: str | None = None, grain_id: int | None = None, limit: int = 50) -> list[dict]:
        return self._get("/relations", kind=kind, grain_id=grain_id, limit=limit)["relations"]

    def clusters(self, *, limit: int = 100, offset: int = 0) -> list[dict]:
        return self._get("/clusters", limit=limit, offset=offset)["clusters"]

    def dreams(self, *, status: str | None = None, limit: int = 50, offset: int = 0) -> list[dict]:
        return self._get("/dreams", status=status, limit=limit, offset=offset)["dreams"]

    def dream_run(self) -> dict:
        """Run the dream cycle now: candidates, accepted and rejected dream ids."""
        return self._post("/dreams/run", {})

    def health(self) -> dict:
        return self._get("/health")


class AsyncFlux:
    """``Flux`` for async code: the same methods, awaitable; each call runs in a worker thread over its own
    keep-alive connection, so the event loop never blocks on the network."""

    def __init__(self, sync: Flux) -> None:
        self.sync = sync

    @classmethod
    def connect(cls, name_or_url: str | None = None, **kwargs: Any) -> AsyncFlux:
        return cls(Flux.connect(name_or_url, **kwargs))

    async def __aenter__(self) -> AsyncFlux:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.sync.close()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.sync, name)
        if name.startswith("_") or not callable(method):
            return method

        @functools.wraps(method)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(method, *args, **kwargs)

        return call


class EmbeddedFlux:
    """The Flux services called in this process: for scripts, notebooks and tests, on an instance no service
    is running on (a second writer beside a running service would bypass its write queue, rate limits and
    keys). Same methods and types as ``Flux``, plus ``forget``."""

    def __init__(self, caller: str | None = None) -> None:
        self.caller = caller

    @classmethod
    def open(cls, data_dir: str | os.PathLike | None = None, *, caller: str | None = None) -> EmbeddedFlux:
        """Set up Django on the instance in ``data_dir`` (default FLUX_DATA_DIR), migrated."""
        import django
        from django.conf import settings

        from flux.instance import Instance, InstanceError
        from flux.processes import running_in

        wanted = str(Path(data_dir).expanduser()) if data_dir is not None else None
        checkout = Path(__file__).resolve().parent.parent
        if not wanted and not os.environ.get("FLUX_DATA_DIR") and not (checkout / "manage.py").exists():
            raise InvalidInput("Flux.embedded needs the folder of its memory: Flux.embedded('~/memories/notes') or "
                               "FLUX_DATA_DIR (an installed package has no folder of its own: the memory went into "
                               "site-packages)", details={"field": "data_dir"})
        folder = Path(wanted or os.environ.get("FLUX_DATA_DIR") or checkout / "var")
        serving = running_in(folder)
        if serving:
            raise InstanceError(f"the service of the instance in {folder} is running ({', '.join(serving)}): use "
                                f"Flux.connect({folder.name!r}) to talk to it, or stop it first "
                                f"(flux stop --name {folder.name})")
        if settings.configured and wanted and Path(settings.DATA_DIR) != Path(wanted):
            raise RuntimeError(f"this process already uses the instance in {settings.DATA_DIR}; "
                               "open one instance per process")
        if wanted:
            os.environ["FLUX_DATA_DIR"] = wanted
        if (folder / "config.yaml").exists() and not settings.configured:  # an instance of `flux init`: its settings
            _as_process_of(Instance(folder.name, folder))  # and servers, as its service has them (not the shell's)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fluxsite.settings")
        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
        return cls(caller)

    def store(self, content: str, **fields: Any) -> int | None:
        return next(iter(self.store_all(content, **fields)), None)

    def store_all(self, content: str, *, provenance: str = "ai_stated", context: str = "",
                  occurred_at: datetime | str | None = None, restore: bool = False) -> list[int]:
        from memory.store import ExtractResult, grain_remember

        result = grain_remember(content=content, provenance=provenance, context=context, occurred_at=occurred_at,
                                restore=restore, caller=self.caller)
        if not isinstance(result, ExtractResult):
            return [result.grain.pk]
        _warn(result.warning)
        return [r.grain.pk for r in result.results]

    def store_batch(self, items: Sequence[Mapping]) -> list[int]:
        from memory.store import grain_store_batch

        return [r.grain.pk for r in grain_store_batch(items=items, caller=self.caller)]

    def retrieve(self, query: str, *, limit: int | None = None, include_quarantined: bool = False) -> RetrieveResult:
        from memory.retrieval import grain_retrieve

        return grain_retrieve(query=query, limit=limit, include_quarantined=include_quarantined, caller=self.caller)

    def feedback(self, trace_id: int, grain_id: int, *, useful: bool) -> None:
        from memory.retrieval import feedback_record

        feedback_record(trace_id=trace_id, grain_id=grain_id, useful=useful, caller=self.caller)

    def forget(self, grain_id: int, *, reason: str) -> None:
        from memory.forgetting import grain_forget

        grain_forget(grain_id=grain_id, reason=reason, caller=self.caller)

    def grains(self, *, status: str | None = None, limit: int = 50, offset: int = 0) -> list[dict]:
        from grains.selectors import grain_list

        return grain_list(status=status, limit=limit, offset=offset)

    def grain(self, grain_id: int) -> dict:
        """A grain's dossier: conduits, confidence history (why it is believed), traces."""
        from memory.dossier import grain_detail

        return grain_detail(grain_id)

    def relate(self, source_id: int, kind: str, target_id: int, *, note: str = "") -> int:
        from memory.corrections import relation_assert

        conduit, _ = relation_assert(source_id=source_id, target_id=target_id, kind=kind, note=note,
                                     caller=self.caller)
        return conduit.pk

    def relations(self, *, kind: str | None = None, grain_id: int | None = None, limit: int = 50) -> list[dict]:
        from epistemic.selectors import relation_list

        return relation_list(kind=kind, grain_id=grain_id, limit=limit)

    def clusters(self, *, limit: int = 100, offset: int = 0) -> list[dict]:
        from graph.selectors import cluster_list

        return cluster_list(limit=limit, offset=offset)

    def dreams(self, *, status: str | None = None, limit: int = 50, offset: int = 0) -> list[dict]:
        from dreams.selectors import dream_list

        return dream_list(status=status, limit=limit, offset=offset)

    def dream_run(self) -> dict:
        from dataclasses import asdict

        from memory.dreaming import dream_run

        return asdict(dream_run())

    def health(self) -> dict:
        from vitals.selectors import health_summary

        return health_summary(write_depth=0)


def _as_process_of(instance: object) -> None:
    """This process's environment as every process of ``instance`` has it (flux.instance.Instance.environ): the
    settings of its config.yaml alone (a Flux setting of the shell's is left out), its servers, its folder."""
    from core.defaults import DEFAULTS
    from flux.instance import SERVERS

    env = instance.environ()
    for key in DEFAULTS:
        if key not in env:
            os.environ.pop(key, None)
    os.environ.update({k: v for k, v in env.items() if k in DEFAULTS or k in SERVERS or k == "FLUX_DATA_DIR"})
