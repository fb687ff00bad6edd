"""flux_eval end to end: a fresh temporary instance, both methods, the JSON line."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graph.semantic import semantic_installed
from tests.servers import SEMANTIC_MISSING, require

ROOT = Path(__file__).resolve().parents[2]
EVAL_DIR = Path(os.environ.get("FLUX_EVAL_DIR") or ROOT.parent / "shared" / "eval")
DEV_FILE = EVAL_DIR / "locomo-dev.json"


def require_eval_file(path: Path) -> None:
    """The LoCoMo data is not in the repository (its licence): found next to the checkout, or in FLUX_EVAL_DIR.
    When FLUX_EVAL_DIR names a folder (as .ci/run does when it finds the data), a missing file is a failure."""
    if path.exists():
        return
    message = f"LoCoMo file not found at {path}"
    if os.environ.get("FLUX_EVAL_DIR"):
        pytest.fail(message + " (FLUX_EVAL_DIR is set)")
    require(False, message + " (set FLUX_EVAL_DIR to the folder holding it)")


def flux_eval(*args: str, data_dir: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FLUX_DATA_DIR": str(data_dir), **extra}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run([sys.executable, "manage.py", "flux_eval", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def tiny_locomo(path: Path) -> Path:
    turns = [
        ("Ann", "I finally adopted a rescue greyhound called Pixel!"),
        ("Bo", "That's wonderful news, congratulations."),
        ("Ann", "He sleeps all day on the sofa."),
        ("Bo", "My sister runs a bakery downtown."),
        ("Ann", "Her croissants are the best in town."),
    ]
    sample = {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "10:00 am on 1 June, 2023",
            "session_1": [{"speaker": s, "dia_id": f"D1:{i}", "text": t} for i, (s, t) in enumerate(turns, 1)],
        },
        "qa": [
            {"question": "What dog did Ann adopt?", "answer": "a greyhound", "evidence": ["D1:1"], "category": 4},
            {"question": "Who runs a bakery?", "answer": "Bo's sister", "evidence": ["D1:4"], "category": 1},
            {"question": "Unanswerable", "adversarial_answer": "x", "evidence": ["D1:2"], "category": 5},
        ],
    }
    path.write_text(json.dumps([sample]))
    return path


def test_flux_eval_prints_both_methods_and_a_json_last_line(tmp_path):
    out = flux_eval("--data", str(tiny_locomo(tmp_path / "tiny.json")), "--json", data_dir=tmp_path / "inst")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["questions"] == 2
    for method in ("flux", "bm25"):
        assert set(result[method]) == {"recall@5", "recall@10", "mrr", "evidence@10", "categories"}
        assert result[method]["recall@10"] == result[method]["evidence@10"] == 1.0
        assert {c: f["questions"] for c, f in result[method]["categories"].items()} == {"1": 1, "4": 1}
    assert "loading turns" in out.stderr  # the progress bar
    assert "no_propagation" not in result
    assert not (tmp_path / "inst" / "flux.sqlite3").exists()  # the instance's own database is untouched


def test_flux_eval_reports_each_file_on_its_own_with_categories(tmp_path):
    one = tiny_locomo(tmp_path / "one.json")
    two = tmp_path / "two.json"
    sample = json.loads(one.read_text())
    sample[0]["qa"] = sample[0]["qa"][:1]  # the single-hop question only
    two.write_text(json.dumps(sample))
    out = flux_eval("--data", str(one), "--data", str(two), "--json", data_dir=tmp_path / "inst")
    assert out.returncode == 0, out.stderr
    files = json.loads(out.stdout.strip().splitlines()[-1])["files"]
    assert {name: result["questions"] for name, result in files.items()} == {"one": 2, "two": 1}
    assert set(files["two"]["flux"]["categories"]) == {"4"}
    assert "== one.json" in out.stdout and "cat 4 (single-hop, 1 q)" in out.stdout


def test_flux_eval_explains_a_missing_file_without_a_traceback(tmp_path):
    out = flux_eval("--data", str(tmp_path / "nope.json"), data_dir=tmp_path)
    assert out.returncode != 0
    assert "no such file" in out.stderr and "Traceback" not in out.stderr


def readme_headline(name: str) -> tuple[list[float], list[float]]:
    """(BM25 R@5, R@10), (Flux R@5, R@10, MRR, evidence@10) of the README's quality row for ``name``."""
    row = next(line for line in (ROOT / "README.md").read_text().splitlines() if f"`{name}`" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    return [float(x) for x in cells[1].split(" / ")], [float(x) for x in cells[2].split(" / ")]


@pytest.mark.slow  # about a minute: the whole dev file, default install
def test_the_readme_quality_row_is_what_the_dev_file_gives(tmp_path):
    """The front page's figures come from this run of the default install (semantic entry on), within 0.01:
    the model's arithmetic may differ in the last digits between processors, nothing more."""
    require_eval_file(DEV_FILE)
    require(semantic_installed(), SEMANTIC_MISSING)
    out = flux_eval("--data", str(DEV_FILE), "--json", data_dir=tmp_path, SEMANTIC_ENTRY="auto")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["questions"] == 231 and result["semantic"] is True
    bm25, flux = readme_headline("locomo-dev.json")
    measured_bm25 = [result["bm25"][k] for k in ("recall@5", "recall@10")]
    measured_flux = [result["flux"][k] for k in ("recall@5", "recall@10", "mrr", "evidence@10")]
    assert measured_bm25 == pytest.approx(bm25, abs=0.01)
    assert measured_flux == pytest.approx(flux, abs=0.01)
    assert result["flux"]["recall@10"] > result["bm25"]["recall@10"]


def test_flux_eval_learn_measures_a_test_half_before_and_after(tmp_path):
    out = flux_eval("--data", str(tiny_locomo(tmp_path / "tiny.json")), "--learn", "--ablate", "--json",
                    data_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert (result["questions"], result["train_questions"], result["seed"]) == (1, 1, 7)
    for row in ("before", "after", "after_no_ranker", "after_no_cues"):
        assert {"recall@5", "recall@10", "mrr", "evidence@10"} <= set(result[row]), row
        assert row in out.stdout
    assert "replaying the training half" in out.stderr


def test_flux_eval_ablate_measures_flux_with_each_part_off(tmp_path):
    out = flux_eval("--data", str(tiny_locomo(tmp_path / "tiny.json")), "--ablate", "--json", data_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    for row in ("no_propagation", "no_clusters", "no_semantic", "no_dates", "bm25_unstemmed"):
        assert {"recall@5", "recall@10", "mrr", "evidence@10"} <= set(result[row]), row
        assert row in out.stdout
    assert result["bm25_unstemmed"]["recall@10"] == 1.0  # "adopt" is in the turn, "bakery" too
    assert set(result["graph"]) == {"clusters", "clustered", "cluster_seconds", "relations"}
    assert result["semantic"] is False  # the tests run with SEMANTIC_ENTRY=off


def test_flux_eval_with_semantic_entry_finds_a_turn_by_meaning(tmp_path):
    require(semantic_installed(), SEMANTIC_MISSING)
    data = tiny_locomo(tmp_path / "tiny.json")
    sample = json.loads(data.read_text())
    sample[0]["qa"] = [{"question": "Which canine pet joined the family?", "answer": "a greyhound",
                        "evidence": ["D1:1"], "category": 4}]
    data.write_text(json.dumps(sample))
    result = {}
    for mode in ("on", "off"):
        out = flux_eval("--data", str(data), "--json", data_dir=tmp_path, SEMANTIC_ENTRY=mode)
        assert out.returncode == 0, out.stderr
        result[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["on"]["semantic"] is True and result["on"]["flux"]["recall@5"] == 1.0
    assert result["off"]["flux"]["recall@10"] == 0.0  # no word of the question is in any turn


def test_flux_eval_dream_measures_again_after_dreaming(tmp_path):
    out = flux_eval("--data", str(tiny_locomo(tmp_path / "tiny.json")), "--dream", "--json", data_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"recall@5", "recall@10", "mrr", "evidence@10"} <= set(result["after_dreams"])
    dreams = result["dreams"]
    assert dreams["clumps"] == dreams["accepted"] + dreams["rejected"] and dreams["cycles"] >= 1
