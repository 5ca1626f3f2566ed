"""The job page's "Log" section: the view's job read carries the newest lines
of the job's log, and headless Chromium shows them as text (a line that looks
like markup stays text)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

import worqr
from tests.support.job_logs import logged_job
from tests.web.test_api import read, run_view
from tests.web.test_browser import browser, wait_for  # noqa: F401  (browser: a fixture)
from worqr.web.reads import JOB_PAGE_LOG_LINES
from worqr.web.serve import WebServer

MARKUP = '<img src=x onerror="document.title=3">'


def test_the_job_read_carries_its_newest_lines(
    redis_url: str, prefix: str, wq: worqr.Worqr, worker: worqr.Worqr
) -> None:
    lines = [f"line {i}" for i in range(JOB_PAGE_LOG_LINES + 20)]
    id = logged_job(wq, worker, "q", lines)
    silent = wq.submit("q", "p").id

    async def scenario(http: httpx.AsyncClient) -> dict[str, Any]:
        logged = (await read(http, "job", queue="q", id=id)).json()
        quiet = (await read(http, "job", queue="q", id=silent)).json()
        page = await http.get("/ui/job", params={"queue": "q", "id": id})
        return {"logged": logged["log"], "quiet": quiet["log"], "page": page.text}

    got = run_view(redis_url, prefix, scenario)
    assert got["logged"] == lines[-JOB_PAGE_LOG_LINES:]
    assert got["quiet"] == []
    assert '<h2>Log <span class="muted">' in got["page"] and 'id="log"' in got["page"]
    assert "line 0" not in got["page"]  # the page's script reads the lines, never the HTML


@pytest.mark.needs("chromium", "chromedriver")
@pytest.mark.slow
def test_the_job_page_shows_the_log_as_text(
    browser: WebDriver,  # noqa: F811
    served_open: WebServer,
    wq: worqr.Worqr,
    worker: worqr.Worqr,
) -> None:
    id = logged_job(wq, worker, "q", ["starting", MARKUP, "two\nlines"])
    browser.get(served_open.url.rstrip("/") + f"/ui/job?queue=q&id={id}")
    log = browser.find_element(By.ID, "log")
    wait_for(browser, "the log", lambda: log.get_attribute("data-lines") == "3")
    assert log.text == f"starting\n{MARKUP}\ntwo\nlines"
    assert browser.find_elements(By.TAG_NAME, "img") == []
    assert browser.title != "3"
    quiet = wq.submit("q", "p").id
    browser.get(served_open.url.rstrip("/") + f"/ui/job?queue=q&id={quiet}")
    log = browser.find_element(By.ID, "log")
    wait_for(browser, "the empty log", lambda: log.get_attribute("data-lines") == "0")
    assert log.text == "\N{EN DASH}"
