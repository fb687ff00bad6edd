"""The built wheel works where a user installs it: in a fresh virtual environment outside the checkout, run from
another directory, `flux` initialises and starts an instance whose dashboard (page and static files), admin and
MCP server answer, and stops it.

The wheel is installed without its dependencies, which the fresh environment sees through a path entry to this
test run's own site-packages (after its own, and without that environment's editable finder), so the test needs
no package index and every module of Flux comes from the wheel.
"""
from __future__ import annotations

import http.cookiejar
import json
import os
import site
import subprocess
import sys
import sysconfig
import urllib.request
from pathlib import Path

import anyio
import pytest

from core.net import free_port
from tests.mcp_bridge.test_mcp import ok
from tests.mcp_bridge.test_mcp_http import call, session

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # builds a wheel (about 30 s) and starts a whole instance


def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, **kwargs)
    assert out.returncode == 0, f"{argv}: {out.stdout[-2000:]} {out.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv (outside the checkout) holding the wheel built from this checkout; yields its bin/."""
    work = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "--quiet",
         "--wheel-dir", str(work / "dist")], cwd=work)
    wheel = next((work / "dist").glob("flux_memory-*.whl"))
    run([sys.executable, "-m", "venv", str(work / "venv")])
    venv_site = Path(run([str(work / "venv" / "bin" / "python"), "-c",
                         "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    ours = [p for p in {*site.getsitepackages(), sysconfig.get_paths()["purelib"]} if Path(p).is_dir()]
    (venv_site / "zz-dependencies.pth").write_text("\n".join(ours) + "\n")
    run([str(work / "venv" / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet",
         str(wheel)])
    return work / "venv" / "bin"


def env_for(home: Path) -> dict[str, str]:
    drop = {"DJANGO_SETTINGS_MODULE", "FLUX_DATA_DIR", "PYTHONPATH", "VIRTUAL_ENV"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "FLUX_HOME": str(home)}


def test_flux_comes_from_the_wheel_not_the_checkout(installed, tmp_path):
    where = run([str(installed / "python"), "-c", "import flux, dashboard; print(flux.__file__, dashboard.__file__)"],
                cwd=tmp_path, env=env_for(tmp_path)).stdout
    assert str(ROOT) not in where and str(installed.parent) in where
    version = run([str(installed / "flux"), "--version"], cwd=tmp_path, env=env_for(tmp_path)).stdout
    assert version.strip() == "flux-memory 0.1.0"


def test_an_installed_flux_serves_dashboard_admin_and_mcp(installed, tmp_path):
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = env_for(home)

    def flux(*args: str) -> subprocess.CompletedProcess:
        return run([str(installed / "flux"), *args], cwd=elsewhere, env=env)

    flux("init", "--name", "mem", "--yes")
    rest, dashboard, mcp = free_port(), free_port(), free_port()
    config = home / "mem" / "config.yaml"
    config.write_text(config.read_text().replace("# REST_PORT: 7465", f"REST_PORT: {rest}")
                      .replace("# DASHBOARD_PORT: 7462", f"DASHBOARD_PORT: {dashboard}")
                      .replace("# MCP_PORT: 7464", f"MCP_PORT: {mcp}"))
    flux("start", "--name", "mem")
    try:
        page = urllib.request.urlopen(f"http://127.0.0.1:{dashboard}/", timeout=30)
        assert page.status == 200 and "/static/dashboard/flux.js" in page.read().decode()
        script = urllib.request.urlopen(f"http://127.0.0.1:{dashboard}/static/dashboard/flux.js", timeout=30)
        assert script.status == 200 and len(script.read()) > 1000
        vendored = urllib.request.urlopen(f"http://127.0.0.1:{dashboard}/static/vendor/sigma/LICENSE.txt", timeout=30)
        assert vendored.status == 200

        link = flux("admin", "--name", "mem", "link").stdout.splitlines()[0]
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        admin = browser.open(link, timeout=30)
        assert admin.status == 200 and "Site administration" in admin.read().decode()
        styles = browser.open(f"http://127.0.0.1:{rest}/static/admin/css/base.css", timeout=30)  # 404s before
        assert styles.status == 200 and len(styles.read()) > 1000

        anyio.run(_one_tool_call, f"http://127.0.0.1:{mcp}/mcp")
        with urllib.request.urlopen(f"http://127.0.0.1:{rest}/grains", timeout=30) as response:
            assert [g["content"] for g in json.load(response)["grains"]] == ["The wheel installs with its templates"]
    finally:
        stopped = subprocess.run([str(installed / "flux"), "stop", "--name", "mem"], cwd=elsewhere, env=env,
                                 capture_output=True, text=True, timeout=120)
    assert stopped.returncode == 0 and "Stopped instance 'mem'" in stopped.stdout
    logs = "".join(p.read_text() for p in (home / "mem" / "logs").glob("*.log"))
    assert "Traceback" not in logs, logs[-3000:]


async def _one_tool_call(url: str) -> None:
    async with session(url) as client:
        stored = ok(await call(client, "flux_store", content="The wheel installs with its templates",
                               caller_id="wheel:test"))
        assert stored["created"] is True


def test_an_installed_flux_runs_commands_on_an_instance_and_makes_no_memory_of_its_own(installed, tmp_path):
    """A management command run by hand without FLUX_DATA_DIR, as the docs once gave it, and Flux.embedded()
    without a folder made a new memory inside site-packages; `flux manage` runs one on an instance."""
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = env_for(home)
    site_packages = Path(run([str(installed / "python"), "-c", "import fluxsite, pathlib; "
                              "print(pathlib.Path(fluxsite.__file__).parent.parent)"], cwd=elsewhere, env=env).stdout
                         .strip())
    bare = subprocess.run([str(installed / "python"), "-m", "django", "migrate"], cwd=elsewhere, capture_output=True,
                          text=True, timeout=300, env={**env, "DJANGO_SETTINGS_MODULE": "fluxsite.settings"})
    assert bare.returncode != 0 and "FLUX_DATA_DIR is not set" in bare.stderr, bare.stderr[-2000:]
    embedded = subprocess.run([str(installed / "python"), "-c", "from flux.sdk import Flux; Flux.embedded()"],
                              cwd=elsewhere, capture_output=True, text=True, timeout=300, env=env)
    assert embedded.returncode != 0 and "Flux.embedded needs the folder of its memory" in embedded.stderr
    assert not (site_packages / "var").exists()
    run([str(installed / "flux"), "init", "--name", "mem", "--yes"], cwd=elsewhere, env=env)
    shown = run([str(installed / "flux"), "manage", "--name", "mem", "showmigrations", "grains"], cwd=elsewhere,
                env=env)
    assert "[X] 0010_relation_notes_off_the_log" in shown.stdout
