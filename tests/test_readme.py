"""The README and docs stay true: the settings table is the generated one, the quick start exists, the front
door stays short and links every document."""
from __future__ import annotations

from pathlib import Path

from core.defaults import INFRASTRUCTURE, env_example, markdown_table

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SETTINGS_DOC = (ROOT / "docs" / "settings.md").read_text()


def test_settings_table_is_the_generated_one():
    start = SETTINGS_DOC.index("<!-- settings:start")
    body = SETTINGS_DOC[SETTINGS_DOC.index("\n", start) + 1 : SETTINGS_DOC.index("<!-- settings:end -->")].strip()
    assert body == markdown_table(), "docs/settings.md is stale: run `python -m core.defaults --docs`"


def test_quick_start_commands_exist():
    for script in ("scripts/run", "scripts/test"):
        assert f"{script} " in README and (ROOT / script).exists()
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text()


def test_env_example_is_the_generated_one():
    assert (ROOT / ".env.example").read_text() == env_example(), "run `python -m core.defaults --env-example`"


def test_every_infrastructure_variable_is_in_the_readme():
    assert all(f"| `{name}` |" in SETTINGS_DOC for name, _, _ in INFRASTRUCTURE)


def test_the_front_door_is_short_and_links_every_document():
    assert len(README.splitlines()) <= 260
    for doc in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "SECURITY.md"]:
        assert f"]({doc.relative_to(ROOT)})" in README, f"README does not link {doc.name}"
