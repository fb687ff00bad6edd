"""An operator in headless Chromium: logs in with `flux admin`'s one-time link, purges a grain with the
session's token, and restores it."""
from __future__ import annotations

import urllib.error
import urllib.request

from playwright.sync_api import sync_playwright

from tests.flux.test_cli import _store, flux, instance  # noqa: F401 - the instance fixture
from tests.servers import require_binary

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def grain_status(port: int, gid: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/grains/{gid}", timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def run_action(page, base: str, listing: str, row: int, action: str, reason: str) -> str:
    """Select one row of an admin list, run an action, confirm with the session token; the page text after."""
    page.goto(f"{base}/admin/grains/{listing}/")
    page.check(f"input[name='_selected_action'][value='{row}']")
    page.select_option("select[name='action']", action)
    page.click("button[name='index']")
    token = page.inner_text("#flux-token")
    page.fill("#flux-reason", reason)
    page.fill("#flux-token-input", token)
    page.click("#flux-confirm")  # returns once the answer's page starts loading, maybe before its body has come
    page.wait_for_load_state("load")
    return page.inner_text("body")


def test_an_operator_purges_and_restores_a_grain_in_a_browser(instance):  # noqa: F811 - the fixture
    chromium = require_binary("/usr/bin/chromium", "Chromium", "apt-get install chromium")
    home, port = instance
    assert flux(home, "start", "--name", "mem").returncode == 0
    base = f"http://127.0.0.1:{port}"
    gid = _store(port, "The gate remote frequency is 433 MHz")
    link = flux(home, "admin", "--name", "mem", "link").stdout.split()[0]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page()
            page.goto(link)
            assert page.url == f"{base}/admin/" and "Site administration" in page.inner_text("body")
            assert "Purge: 1 done." in run_action(page, base, "grain", gid, "purge_selected", "leaked")
            assert grain_status(port, gid) == 404
            page.goto(f"{base}/admin/grains/tombstone/")
            tomb = page.get_attribute("input[name='_selected_action']", "value")
            assert "Restore: 1 done." in run_action(page, base, "tombstone", int(tomb), "restore_selected", "mistake")
            assert grain_status(port, gid) == 200
            page.goto(f"{base}/admin/grains/auditevent/")
            audit = page.inner_text("#result_list")
            assert "purge" in audit and "restore" in audit and "flux-admin:admin" in audit
        finally:
            browser.close()
