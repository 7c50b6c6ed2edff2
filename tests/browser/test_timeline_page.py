"""`tidal timeline -o html` opened in a real browser: Debian's Chromium, driven by Playwright with that
browser (no browser download). The page must draw its picture, name every zone, put a zone that misses
its close first with its mark, say what a mark is when hovered, and fetch nothing.

Screenshots go to target/browser/ (docs/images/timeline-page.png is one of them). A page of a larger
cluster is checked too when TIDAL_TIMELINE_PAGE names one (`cargo bench --bench timeline` writes the
150,000-pod cluster's page to target/browser/timeline-150k.html).
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "target" / "browser"
# Flags that keep Chromium off the network it would reach for by itself (updates, sync, lookups), as a
# page that fetches nothing must be seen to.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    path = os.environ.get("TIDAL_CHROMIUM") or shutil.which("chromium")
    if not path:
        pytest.skip(
            "no Chromium: install Debian's (apt-get install chromium), or set TIDAL_CHROMIUM to a "
            "Chromium binary; scripts/install-test-tools does it"
        )
    return path


def tidal() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    binary = Path(os.environ.get("TIDAL_BIN", target / "debug" / "tidal"))
    if not binary.exists():
        subprocess.run(["cargo", "build", "--quiet", "--bin", "tidal"], cwd=ROOT, check=True)
    return binary


def timeline(cluster: str, now: str, *extra: str) -> tuple[Path, dict]:
    """Writes the page of `cluster` at `now` to target/browser/ and returns it with the JSON output."""
    OUT.mkdir(parents=True, exist_ok=True)
    args = [str(tidal()), "timeline", "--cluster", str(ROOT / cluster), "--now", now, *extra]
    page = subprocess.run([*args, "-o", "html"], check=True, capture_output=True, text=True).stdout
    data = subprocess.run([*args, "-o", "json"], check=True, capture_output=True, text=True).stdout
    path = OUT / (Path(cluster).stem + ".html")
    path.write_text(page)
    return path, json.loads(data)


@pytest.fixture(scope="module")
def browser():
    executable = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def open_page(browser, path: Path):
    """The page, loaded; and every address it asked for."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    asked = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page, asked


def check_picture(page, asked, zones):
    """The picture is drawn, names every zone, and nothing was fetched but the page itself."""
    picture = page.locator("svg.picture")
    assert picture.is_visible()
    box = picture.bounding_box()
    assert box and box["width"] > 600 and box["height"] > 50, box
    drawn = page.eval_on_selector_all("svg.picture g.zone", "lanes => lanes.map(l => l.dataset.zone)")
    assert sorted(drawn) == sorted(zones), drawn
    for zone in zones:
        lane = page.locator(f'svg.picture g.zone[data-zone="{zone}"]')
        assert lane.locator("text", has_text=zone).first.is_visible(), zone
        lane_box = lane.bounding_box()
        assert lane_box and lane_box["width"] > 600, (zone, lane_box)
    assert all(url.startswith(("file:", "data:")) for url in asked), asked


def test_the_demo_page_draws_both_zones_and_fetches_nothing(browser):
    path, data = timeline("examples/demo-cluster.yaml", "2026-11-23T09:30:00Z")
    page, asked = open_page(browser, path)
    check_picture(page, asked, [z["name"] for z in data["zones"]])
    assert page.locator(".verdicts.ok").is_visible()
    # Rounds are drawn and say what they are.
    rounds = page.locator("svg.picture rect.round")
    assert rounds.count() > 0
    assert "evicted" in rounds.first.locator("title").text_content()
    page.screenshot(path=str(OUT / "timeline-demo.png"), full_page=True)


def test_a_zone_that_misses_its_close_comes_first_with_its_mark(browser):
    path, data = timeline(
        "tests/fixtures/drains/close-missed.yaml", "2026-11-23T08:00:00Z", "--span", "4h"
    )
    missed = [d["zone"] for d in data["drains"] if d["atRisk"]]
    assert missed == ["tight"], data["drains"]
    page, asked = open_page(browser, path)
    check_picture(page, asked, [z["name"] for z in data["zones"]])
    first = page.locator("svg.picture g.zone").first
    assert first.get_attribute("data-zone") == "tight"
    mark = first.locator(".at-risk-mark")
    assert mark.is_visible()
    assert "misses a close" in mark.text_content()
    assert "tight" in page.locator(".verdicts.miss").text_content()
    # Hovering the missed close says what it is.
    close = first.locator("g.close-mark.missed rect.hit")
    close.hover()
    assert "misses the close by" in close.locator("title").text_content()
    assert page.locator("svg.picture g.zone:not(.at-risk)").first.get_attribute("data-zone") == "roomy"
    page.screenshot(path=str(OUT / "timeline-page.png"), full_page=False)


def test_a_large_cluster_s_page_when_given(browser):
    given = os.environ.get("TIDAL_TIMELINE_PAGE")
    if not given:
        pytest.skip("TIDAL_TIMELINE_PAGE not set (cargo bench --bench timeline writes one)")
    path = Path(given).resolve()
    page, asked = open_page(browser, path)
    zones = page.eval_on_selector_all("svg.picture g.zone", "lanes => lanes.map(l => l.dataset.zone)")
    assert zones, "no zone drawn"
    check_picture(page, asked, zones)
    marks = page.locator("svg.picture rect.round").count()
    assert marks <= 246 * len(zones) + 246, marks
    page.screenshot(path=str(OUT / (path.stem + ".png")), full_page=False)
