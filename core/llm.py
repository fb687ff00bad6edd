"""A client of a local Ollama server (POST /api/generate), used by flux_extracts (and later the dream cycle)."""
from __future__ import annotations

import base64
import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request

from core.conf import flux_setting as S
from core.errors import LLMBadAnswer, LLMUnavailable
from core.net import AnswerTooLong, read_by

MAX_ANSWER_BYTES = 32 * 1024 * 1024  # an answer longer than this is no list of facts


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
    timeout = S("LLM_TIMEOUT_SECONDS")
    deadline = time.monotonic() + timeout
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = read_by(response, deadline, max_bytes=MAX_ANSWER_BYTES)
    except TimeoutError:
        raise LLMUnavailable(f"the LLM at {url} did not finish its answer within {timeout:g} s "
                             "(LLM_TIMEOUT_SECONDS)", details={"url": url}) from None
    except AnswerTooLong:
        raise LLMBadAnswer(f"the LLM at {url} answered more than {MAX_ANSWER_BYTES} bytes", details={"url": url}) \
            from None
    except http.client.HTTPException as exc:  # a reply cut short (IncompleteRead), or not HTTP (BadStatusLine)
        raise LLMUnavailable(f"the LLM at {url} sent no whole HTTP answer ({type(exc).__name__}); is OLLAMA_URL "
                             "an Ollama server?", details={"url": url}) from None
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
