"""Telegram alerts on new health warnings: the Bot API's sendMessage, retried with backoff, off the caller's thread.

A failed alert is logged, never raised: health must not depend on a chat service.
"""
from __future__ import annotations

import json
import logging
import time
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor

from core.conf import flux_setting as S
from core.net import read_by

log = logging.getLogger("flux.alerts")
ATTEMPT_SECONDS = 10  # one attempt, its answer included
MAX_ANSWER_BYTES = 1024 * 1024
_sender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flux-alerts")


def alerts_configured() -> bool:
    return bool(S("TELEGRAM_BOT_TOKEN") and S("TELEGRAM_CHAT_ID"))


def telegram_send(text: str, *, token: str, chat_id: str, api_url: str, retries: int, backoff: float) -> bool:
    """POST /bot<token>/sendMessage until it answers ok, at most ``retries`` times; whether it was sent."""
    url = f"{api_url.rstrip('/')}/bot{token}/sendMessage"
    body = json.dumps({"chat_id": chat_id, "text": text}).encode()
    for attempt in range(1, retries + 1):
        request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=ATTEMPT_SECONDS) as response:
                answer = json.loads(read_by(response, time.monotonic() + ATTEMPT_SECONDS, max_bytes=MAX_ANSWER_BYTES)
                                    or b"{}")
            if isinstance(answer, dict) and answer.get("ok"):
                return True
            problem = "the API did not answer ok"
        except Exception as exc:  # noqa: BLE001 - whatever went wrong, an alert is logged and retried, never raised
            problem = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}".replace(token, "<token>")
        if attempt < retries:
            time.sleep(backoff * 2 ** (attempt - 1))
    log.warning("health alert not sent after %d attempts (%s): %s", retries, problem, text)
    return False


def alert_soon(text: str) -> Future | None:
    """Send ``text`` to the configured chat in the background; None when alerts are not configured."""
    if not alerts_configured():
        return None
    return _sender.submit(telegram_send, text, token=S("TELEGRAM_BOT_TOKEN"), chat_id=S("TELEGRAM_CHAT_ID"),
                          api_url=S("TELEGRAM_API_URL"), retries=S("ALERT_RETRIES"),
                          backoff=S("ALERT_BACKOFF_SECONDS"))
