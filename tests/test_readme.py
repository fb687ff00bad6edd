"""The README stays true: the settings table is the generated one, the quick start exists."""
from __future__ import annotations

from pathlib import Path

from fluxsite.defaults import INFRASTRUCTURE, env_example, markdown_table

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_settings_table_is_the_generated_one():
    start = README.index("<!-- settings:start")
    body = README[README.index("\n", start) + 1 : README.index("<!-- settings:end -->")].strip()
    assert body == markdown_table(), "README settings table is stale: run `python -m fluxsite.defaults --readme`"


def test_quick_start_commands_exist():
    for script in ("scripts/run", "scripts/test"):
        assert f"{script} " in README and (ROOT / script).exists()
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text()


def test_env_example_is_the_generated_one():
    assert (ROOT / ".env.example").read_text() == env_example(), "run `python -m fluxsite.defaults --env-example`"


def test_every_infrastructure_variable_is_in_the_readme():
    assert all(f"| `{name}` |" in README for name, _, _ in INFRASTRUCTURE)
