"""What flux_onboard returns: the per-turn workflow, written for an agent's AGENTS.md.

Flux only learns when agents follow the loop retrieve -> answer -> store ->
rate, so the bridge hands the loop to every agent in words it can paste into
an always-loaded instruction file. Built from settings alone: it works while
the service is down.
"""
from __future__ import annotations

import textwrap

from core.conf import flux_setting
from mcp_bridge.identity import ROLES

_STORE_STEP = {
    "caller_extracts": (
        "Store each new fact worth remembering with `flux_store`, one atomic, self-contained fact per call "
        "(\"The user's dog is called Rex\", not \"he said the name\"). Set `provenance` to `user_stated` for "
        "what the user told you, `ai_stated` (default) for what you said, `ai_inferred` for your conclusions, "
        "`observed` for what you saw in files or tools. Pass the same `context` (e.g. a conversation id) for "
        "facts of one conversation: Flux links them."
    ),
    "flux_extracts": (
        "Send the new information of the turn to `flux_store` as plain text (the user's words or your summary): "
        "this instance extracts the atomic facts itself with an LLM and stores each one; the answer lists them. "
        "Pass the same `context` (e.g. a conversation id) for one conversation: Flux links its facts."
    ),
}


def onboarding_text() -> str:
    """The instructions, for the operating mode this bridge is configured with."""
    mode = str(flux_setting("OPERATING_MODE"))
    store_step = textwrap.fill(_STORE_STEP.get(mode, _STORE_STEP["caller_extracts"]), width=105,
                               initial_indent="3. ", subsequent_indent="   ")
    roles = ", ".join(f"`{r}`" for r in ROLES)
    grace = flux_setting("FEEDBACK_ENFORCEMENT_GRACE_SECONDS")
    return f"""# Flux Memory (long-term memory) - paste this section into AGENTS.md

Flux Memory is your long-term memory across sessions, reached through the `flux_*` MCP tools.
Operating mode of this instance: `{mode}`.

## Every turn
1. Before answering, call `flux_retrieve` with the user's request as `query`. Use the grains that are
   relevant; keep the `trace_id` and the `id` of every returned grain.
2. Answer the user.
{store_step}
4. Rate every grain that `flux_retrieve` returned with `flux_feedback(trace_id, grain_id, useful)`:
   `useful=true` if it helped this answer, `useful=false` if not. Rate all of them, every turn, also when
   none helped: this is how Flux learns what to return. A caller that leaves grains unrated for more than
   {grace} s is refused further retrievals (error `feedback_owed`, whose details list what to rate).

## Who is calling
Pass the same identity on every `flux_store`, `flux_retrieve` and `flux_feedback` call, either
`caller_id="client:role"` (e.g. `caller_id="codex:chat"`) or `client="codex"` and `role="chat"`.
`client` is a stable name of your application (letters, digits and ._@+-). `role` is one of:
{roles}.
Without an identity, calls are recorded as `anonymous:unknown`.

## When a tool fails
The error text starts with a code. `feedback_owed`: rate the grains listed in its details, then retry.
`rate_limited` or `overloaded`: wait the `retry_after` seconds in its details, then retry.
`service_unavailable`: the Flux service is not running; tell the user the command in the message.
`invalid_input`: fix the argument the message names.

Other tools: `flux_health` (counts and queue depths), `flux_list_grains` (stored grains, newest first),
`flux_onboard` (these instructions).
"""
