"""The web view's charts in a real headless Chromium, with points from a real
`worqr worker`'s runs (no Prometheus anywhere: the history is in Redis): the
front page's mesh-wide charts and a queue's, for 1 h, 8 h and 72 h."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

import worqr
from tests.history.conftest import HistoryMesh
from tests.support.waiting import wait_until
from tests.web.test_browser import browser, wait_for  # noqa: F401  (the fixture)
from worqr._core.history_model import totals
from worqr.web.history import CHARTS, RANGES
from worqr.web.serve import WebServer

pytestmark = [pytest.mark.needs("chromium", "chromedriver"), pytest.mark.slow]


@pytest.fixture
def view(history_mesh: HistoryMesh) -> Iterator[WebServer]:
    settings = worqr.Settings(prefix=history_mesh.prefix)
    server = WebServer(lambda: worqr.AsyncWorqr(history_mesh.url, settings=settings), token=None)
    server.start()
    yield server
    server.stop()


def drawn(driver: WebDriver) -> dict[str, int]:
    """How many points each chart draws, by its name."""
    found: dict[str, int] = driver.execute_script(
        "return Object.fromEntries(Array.from(document.querySelectorAll('.chart'),"
        " (c) => [c.dataset.chart, Number(c.dataset.points)]))"
    )
    return found


def test_the_charts_draw_the_history_of_a_real_run(
    browser: WebDriver,  # noqa: F811
    view: WebServer,
    history_mesh: HistoryMesh,
) -> None:
    wq = history_mesh.client
    refs = [wq.submit("timed", f"0.01:{n % 3}") for n in range(9)]
    wait_until(
        lambda: all(wq.get_job("timed", r.id).state in ("finished", "failed") for r in refs),
        timeout=30,
    )
    wait_until(lambda: totals(wq.get_history("timed"))["failed"] == 3, timeout=10)
    names = {name for name, _ in CHARTS}
    for page in ("/", "/ui/queue?name=timed"):
        browser.get(view.url.rstrip("/") + page)
        for label, _ in RANGES:
            browser.find_element(
                By.CSS_SELECTOR, f'button.range[data-since="{dict(RANGES)[label]}"]'
            ).click()
            wait_for(
                browser,
                f"the {label} charts of {page}",
                lambda: set(drawn(browser)) == names and min(drawn(browser).values()) >= 1,
            )
            widths = browser.execute_script(  # one read: a refresh redraws them
                "return Array.from(document.querySelectorAll('.chart canvas'), (c) => c.width)"
            )
            assert len(widths) == len(names) and min(widths) > 0, widths
        result = browser.find_element(By.ID, "history-result").text
        assert "15 started, 6 finished, 6 retried, 3 failed, 0 cancelled" in result, result
        shot = os.environ.get("WORQR_CHARTS_SCREENSHOT")
        if shot and page == "/":
            browser.save_screenshot(shot)
