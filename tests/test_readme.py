"""The README stays true: every setting documented with its default, commands that exist."""
from __future__ import annotations

from pathlib import Path

from fluxsite.defaults import SETTINGS

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_every_flux_setting_is_in_the_readme_table_with_its_default():
    for s in SETTINGS:
        default = str(s.default).lower() if isinstance(s.default, bool) else s.default
        assert f"| `{s.name}` | `{default}` |" in README, f"{s.name} missing or stale in README"


def test_quick_start_commands_exist():
    root = Path(__file__).resolve().parents[1]
    for script in ("scripts/run", "scripts/test"):
        assert f"{script} " in README and (root / script).exists()
    assert "scripts/test" in (root / ".ci" / "run").read_text()
