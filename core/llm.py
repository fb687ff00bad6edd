"""A client of a local Ollama server (POST /api/generate), used by flux_extracts (and later the dream cycle)."""
from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request

from core.conf import flux_setting as S
from core.errors import LLMBadAnswer, LLMUnavailable


def ollama_generate_json(prompt: str) -> str:
    """The model's answer (a JSON text, as asked with ``format: json``) to ``prompt``.

    Raises LLMUnavailable when the server cannot be reached, times out or
    answers with an error status, LLMBadAnswer when its reply is malformed.
    """
    url, headers = split_credentials(S("OLLAMA_URL").rstrip("/") + "/api/generate")
    body = {"model": S("LLM_MODEL"), "prompt": prompt, "format": "json", "stream": False,
            "options": {"temperature": 0}}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=S("LLM_TIMEOUT_SECONDS")) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode(errors="replace")
        raise LLMUnavailable(f"the LLM at {url} answered HTTP {exc.code}: {detail} (is model "
                             f"{S('LLM_MODEL')!r} pulled? `ollama pull {S('LLM_MODEL')}`)",
                             details={"url": url, "status": exc.code}) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise LLMUnavailable(f"the LLM at {url} cannot be reached ({reason}); start Ollama or set OLLAMA_URL",
                             details={"url": url}) from None
    try:
        return json.loads(raw)["response"]
    except (ValueError, KeyError, TypeError):
        raise LLMBadAnswer(f"the LLM at {url} sent a reply without a 'response': {raw[:200]!r}",
                           details={"url": url}) from None


def split_credentials(url: str) -> tuple[str, dict[str, str]]:
    """(the URL without credentials, headers): a ``user:password@`` in the URL becomes a Basic Authorization
    header, so it is never shown in a message (which names the URL)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, {}
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    bare = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return bare, {"Authorization": f"Basic {token}"}
