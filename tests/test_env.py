"""DB-free tests of the environment readers."""
from __future__ import annotations

import pytest

from core.defaults import SETTINGS
from core.env import SettingError, database_from_url, env_value, parse_value, postgres_url


def test_values_parse_as_the_type_of_their_default():
    assert parse_value("MAX_HOPS", " 4 ", 3) == 4
    assert parse_value("ATTENUATION", "0.5", 0.85) == 0.5
    assert parse_value("FLAG", "off", True) is False


@pytest.mark.parametrize("raw,default", [("four", 3), ("nan", 0.5), ("maybe", True)])
def test_bad_values_name_the_setting(raw, default):
    with pytest.raises(SettingError, match="NAME="):
        parse_value("NAME", raw, default)


def test_unset_or_empty_means_default():
    assert env_value("X", 7, {}) == 7
    assert env_value("X", 7, {"X": ""}) == 7


def test_database_url_selects_postgres_or_sqlite():
    pg = database_from_url("postgres://u:p%40ss@127.0.0.1:5433/flux")
    assert (pg["ENGINE"], pg["NAME"], pg["PASSWORD"], pg["PORT"]) == (
        "django.db.backends.postgresql", "flux", "p@ss", "5433")
    assert database_from_url("sqlite:////tmp/x.sqlite3")["NAME"] == "/tmp/x.sqlite3"
    with pytest.raises(SettingError, match="unsupported scheme"):
        database_from_url("mysql://x/y")
    # and back: the URL a service or a PostgreSQL tool is given for that entry, the password only when asked
    assert database_from_url(postgres_url(pg, with_password=True)) == pg
    assert postgres_url(pg, with_password=False) == "postgresql://u@127.0.0.1:5433/flux"


def test_every_setting_has_a_description_and_a_unique_name():
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names))
    assert all(s.description.endswith(".") for s in SETTINGS)


def test_text_settings_with_a_fixed_set_of_values_refuse_others():
    assert parse_value("SEMANTIC_ENTRY", " off ", "auto") == "off"
    with pytest.raises(SettingError, match="SEMANTIC_ENTRY='maybe' is not valid: expected one of auto, on, off"):
        parse_value("SEMANTIC_ENTRY", "maybe", "auto")
    with pytest.raises(SettingError, match="expected one of caller_extracts, flux_extracts"):
        parse_value("OPERATING_MODE", "llm", "caller_extracts")


@pytest.mark.parametrize("raw", ["fast", "0/m", "600/minute", "600", "-5/s", "1e3/m", "600 / m"])
def test_request_rates_refuse_anything_but_n_per_unit(raw):
    with pytest.raises(SettingError, match=r"RATE_RETRIEVE=.* expected a rate such as 600/m"):
        parse_value("RATE_RETRIEVE", raw, "600/m")
    assert parse_value("RATE_RETRIEVE", " 30/s ", "600/m") == "30/s"
