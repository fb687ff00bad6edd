"""MCP client snippets for an instance: each client launches `python -m flux mcp --name NAME` over stdio."""
from __future__ import annotations

import json
import os
from pathlib import Path

from flux.instance import Instance, python


def _server(instance: Instance) -> dict:
    spec: dict = {"command": python(), "args": ["-m", "flux", "mcp", "--name", instance.name]}
    if os.environ.get("FLUX_HOME"):
        spec["env"] = {"FLUX_HOME": str(instance.path.parent)}
    return spec


def _toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid TOML basic string


def snippets(instance: Instance) -> dict[str, str]:
    """File name -> content, for Codex, Claude Desktop, Claude Code, Cursor and any other client."""
    key = f"flux-{instance.name}"
    spec = _server(instance)
    toml = [f'[mcp_servers."{key}"]', f"command = {_toml_string(spec['command'])}",
            "args = [" + ", ".join(_toml_string(a) for a in spec["args"]) + "]"]
    if "env" in spec:
        toml.append("env = { " + ", ".join(f"{k} = {_toml_string(v)}" for k, v in spec["env"].items()) + " }")
    servers = json.dumps({"mcpServers": {key: spec}}, indent=2) + "\n"
    generic = {"name": key, "transport": "stdio", **spec,
               "note": "Launch this command from your MCP client; call flux_onboard first."}
    return {
        "codex.toml": "# Add to ~/.codex/config.toml\n" + "\n".join(toml) + "\n",
        "claude_desktop.json": servers,
        "claude_code.json": servers,
        "cursor.json": servers,
        "generic.json": json.dumps(generic, indent=2) + "\n",
    }


def write_snippets(instance: Instance) -> dict[Path, str]:
    """Write every snippet into the instance's integrations/ folder; returns path -> content."""
    instance.integrations.mkdir(parents=True, exist_ok=True)
    written = {instance.integrations / name: text for name, text in snippets(instance).items()}
    for path, text in written.items():
        path.write_text(text, encoding="utf-8")
    return written
