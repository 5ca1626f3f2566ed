"""The web view in a real headless Chromium (Selenium, Debian's chromium and
chromium-driver): a view served with a token asks for it before it shows
anything and keeps it in the tab's sessionStorage; against a running mesh with
traffic, the page shows the right counts, rates and workers, a recovery when a
worker dies, and its retry button moves a failed job back to queued. Saves a
screenshot under the test's tmp folder, and to docs/web-view.png with
``WORQR_SAVE_SCREENSHOT=1``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

import worqr
from tests.support import ROOT, tools
from tests.support.clients import Factory
from tests.support.mesh import kill
from tests.web.conftest import (
    BAD_TASKS,
    DELAYED_EMAILS,
    EMAILS,
    FAILING_EMAILS,
    IMPORTS,
    TASKS,
    TICKS,
    TOKEN,
    Mesh,
)
from worqr.web.pages import GROUP_COLUMNS, GROUPS_PAGE, QUEUE_COLUMNS
from worqr.web.serve import WebServer

pytestmark = [pytest.mark.needs("chromium", "chromedriver"), pytest.mark.slow]

SCREENSHOT_ENV = "WORQR_SAVE_SCREENSHOT"
MAX_SCREENSHOT_BYTES = 200_000


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    """Headless Chromium with the driver given by path: Selenium Manager never
    looks for one on the network."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(tools.find("chromium"))
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,860",
        f"--user-data-dir={tmp_path / 'chromium'}",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(
        service=Service(executable_path=str(tools.find("chromedriver"))), options=options
    )
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(
    driver: WebDriver, what: str, check: Callable[[], object], timeout: float = 15
) -> None:
    """Until ``check()`` is truthy; the page re-renders, so an element may go
    stale between a find and its read: that is a "not yet"."""

    def attempt(_: WebDriver) -> object:
        try:
            return check()
        except StaleElementReferenceException:
            return False

    WebDriverWait(driver, timeout, poll_frequency=0.1).until(attempt, f"waited for {what}")


def table(driver: WebDriver, id: str) -> list[list[str]]:
    """The cells of a table, read in one script: the page re-renders between
    two WebDriver calls, never during a script (a hidden table reads too)."""
    rows: list[list[str]] = driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), (row) =>"
        " Array.from(row.querySelectorAll('td'), (cell) => cell.innerText.trim()))",
        f"#{id} tbody tr",
    )
    return rows


def queue_row(driver: WebDriver, name: str) -> dict[str, str]:
    for cells in table(driver, "queues"):
        if cells and cells[0] == name:
            return dict(zip(QUEUE_COLUMNS, cells, strict=True))
    return {}


def token_form(driver: WebDriver) -> str:
    """The token form's message while the form shows, else ""."""
    if not driver.find_element(By.ID, "token-form").is_displayed():
        return ""
    return driver.find_element(By.ID, "token-message").text


def stored_token(driver: WebDriver) -> object:
    return driver.execute_script("return sessionStorage.getItem('worqr-token')")


def give_token(driver: WebDriver, token: str) -> None:
    """Wait for the page to ask for the token, then type it in and send it."""
    wait_for(driver, "the token form", lambda: token_form(driver))
    field = driver.find_element(By.ID, "token-input")
    field.clear()
    field.send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()


def data_shown(driver: WebDriver) -> bool:
    return driver.find_element(By.TAG_NAME, "main").is_displayed()


def test_the_view_asks_for_the_token_and_keeps_it_in_the_tab(
    browser: WebDriver, served: WebServer, wq: worqr.Worqr
) -> None:
    wq.submit("orders", "2 boxes", id="order-1")
    browser.get(served.url)
    wait_for(browser, "the token form", lambda: token_form(browser))
    assert token_form(browser) == "This view needs the server's bearer token."
    assert not data_shown(browser)
    assert table(browser, "queues") == [["no queues yet"]]  # nothing was read
    assert stored_token(browser) is None

    # A wrong token: refused, forgotten, and the form asks again; still no data.
    give_token(browser, "wrong-token-0123456789")
    wait_for(browser, "the refusal", lambda: "The token was refused" in token_form(browser))
    assert "not this view's" in token_form(browser)
    assert stored_token(browser) is None
    assert not data_shown(browser) and table(browser, "queues") == [["no queues yet"]]

    give_token(browser, TOKEN)
    wait_for(browser, "the queues", lambda: queue_row(browser, "orders"))
    assert queue_row(browser, "orders")["queued"] == "1"
    assert data_shown(browser) and not token_form(browser)
    assert stored_token(browser) == TOKEN  # in the tab's sessionStorage
    assert browser.execute_script("return document.cookie") == ""  # never a cookie
    assert TOKEN not in browser.current_url  # never in a URL

    # It keeps polling with the token, and a reload of the tab keeps the token.
    wq.submit("invoices", "march")
    wait_for(browser, "a new queue", lambda: queue_row(browser, "invoices"))
    browser.refresh()
    wait_for(browser, "the queues again", lambda: queue_row(browser, "invoices"))
    assert not token_form(browser)


def test_the_view_of_a_live_mesh(
    browser: WebDriver,
    served: WebServer,
    mesh: Mesh,
    trickle: None,
    make: Factory,
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    victim = make(start=True)  # a worker holding a task when it dies
    victim.enqueue("sessions", "session-1")
    assert victim.dequeue("sessions") is not None

    browser.get(served.url)
    give_token(browser, TOKEN)
    emails: dict[str, str] = {}

    def emails_counted() -> bool:
        emails.update(queue_row(browser, EMAILS))
        return emails.get("failed") == str(FAILING_EMAILS)

    wait_for(browser, "the emails queue's counts", emails_counted)
    assert emails["kind"] == "jobs"
    assert emails["delayed"] == str(DELAYED_EMAILS)
    assert emails["finished"] == "12"
    assert queue_row(browser, TASKS)["failed"] == str(BAD_TASKS)
    assert queue_row(browser, IMPORTS)["failed"] == "1"
    wait_for(browser, "rates of the ticks queue", lambda: rate(queue_row(browser, TICKS)["in /s"]))
    workers = {cells[0]: cells for cells in table(browser, "workers")}
    assert workers[mesh.worker.worker_id][1:3] == ["yes", os.uname().nodename]
    assert workers[victim.worker_id][4] == "1"  # in process

    # The victim dies: its peer (the mesh's worker) returns its task to the front.
    dead = kill(redis_client, victim)
    wait_for(
        browser,
        "the recovery",
        lambda: any("1 returned to the front" in row[-1] for row in table(browser, "recoveries")),
    )
    # Its departure may show a poll later: the reaper returns its tasks, then deregisters it.
    wait_for(
        browser,
        "the departure",
        lambda: any(f"worker {dead} left" in row[1] for row in table(browser, "recoveries")),
    )
    assert queue_row(browser, "sessions")["recovered"] == "1"
    save_screenshot(browser, tmp_path)

    # Retry the failed import from its queue's page: refused with a wrong token
    # (then the reads are refused too: the form asks again, the data goes),
    # done with the right one.
    browser.find_element(By.LINK_TEXT, IMPORTS).click()
    retry = (By.CSS_SELECTOR, "#failed button.retry")
    wait_for(browser, "the imports page", lambda: browser.find_elements(*retry))
    browser.execute_script(  # one script: no poll can run between the two
        "sessionStorage.setItem('worqr-token', arguments[0]);"
        " document.querySelector('#failed button.retry').click()",
        "wrong-token-0123456789",
    )
    wait_for(browser, "the refusal", lambda: "The token was refused" in token_form(browser))
    assert not data_shown(browser)
    info = mesh.client.get_job(IMPORTS, mesh.failed_import)
    assert info is not None and info.state == "failed"

    give_token(browser, TOKEN)
    wait_for(browser, "the data again", lambda: browser.find_element(*retry).is_displayed())
    browser.find_element(*retry).click()
    result = browser.find_element(By.ID, "failed-result")
    wait_for(browser, "the retry", lambda: "retried" in result.text)
    info = mesh.client.get_job(IMPORTS, mesh.failed_import)
    assert info is not None and info.state == "queued"  # no worker serves imports now
    wait_for(browser, "the counts to follow", lambda: card(browser, "queued") == "1")
    assert card(browser, "failed") == "0"

    # The job's own page: its history, attempts and error; no payload.
    browser.get(served.url.rstrip("/") + f"/ui/job?queue={IMPORTS}&id={mesh.failed_import}")
    wait_for(browser, "the job's detail", lambda: detail(browser).get("state") == "queued")
    assert detail(browser)["attempts"] == "1"
    assert detail(browser)["error"] == "Fail: cannot import customers.csv"
    assert "payload" not in detail(browser)
    steps = [row[0] for row in table(browser, "history")]
    assert steps == ["created", "last started"]


def rate(text: str) -> float:
    """A rate cell: a dash until the page has two polls to compare."""
    return 0.0 if text == "\N{EN DASH}" else float(text)


def card(driver: WebDriver, state: str) -> str:
    found = driver.find_elements(By.CSS_SELECTOR, f'#counts [data-state="{state}"] .count')
    return found[0].text if found else ""


def detail(driver: WebDriver) -> dict[str, str]:
    """The job's detail table, heading -> cell, read in one script (as `table`:
    a poll re-renders it between two WebDriver calls, which made rows stale)."""
    pairs: list[list[str]] = driver.execute_script(
        "return Array.from(document.querySelectorAll('#detail tbody tr'), (row) => {"
        " const head = row.querySelector('th'), cell = row.querySelector('td');"
        " return head && cell ? [head.innerText.trim(), cell.innerText.trim()] : null;"
        "}).filter((pair) => pair !== null)"
    )
    return dict((head, cell) for head, cell in pairs)


def save_screenshot(driver: WebDriver, tmp_path: Path) -> None:
    shot = tmp_path / "web-view.png"
    assert driver.save_screenshot(str(shot))
    if os.environ.get(SCREENSHOT_ENV):
        size = shot.stat().st_size
        assert size < MAX_SCREENSHOT_BYTES, f"the screenshot is {size} bytes"
        shutil.copyfile(shot, ROOT / "docs" / "web-view.png")


HOSTILE_QUEUE = '<img src=x onerror="document.title=1">'
HOSTILE_ID = "<script>document.title=2</script>"


def test_hostile_names_show_as_text(
    browser: WebDriver, served_open: WebServer, wq: worqr.Worqr
) -> None:
    wq.submit(HOSTILE_QUEUE, "x", id=HOSTILE_ID)
    browser.get(served_open.url)  # without a token: the reads need none
    wait_for(browser, "the hostile queue", lambda: queue_row(browser, HOSTILE_QUEUE))
    browser.find_element(By.LINK_TEXT, HOSTILE_QUEUE).click()
    wait_for(browser, "its jobs", lambda: browser.find_elements(By.LINK_TEXT, HOSTILE_ID))
    browser.find_element(By.LINK_TEXT, HOSTILE_ID).click()
    wait_for(browser, "the job's detail", lambda: detail(browser).get("id") == HOSTILE_ID)
    assert not token_form(browser)
    assert browser.find_elements(By.TAG_NAME, "img") == []
    assert browser.title == f"{HOSTILE_ID} - worqr"  # no script ran: the title is the id
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018


def test_a_queue_shows_its_limits_and_when_they_hold_it_back(
    browser: WebDriver, served: WebServer, wq: worqr.Worqr
) -> None:
    wq.submit_many("limited", ["a", "b"])
    wq.configure_queue("limited", rate=(20, 1.0), max_active=1)
    browser.get(served.url.rstrip("/") + "/ui/queue?name=limited")
    give_token(browser, TOKEN)
    line = browser.find_element(By.ID, "limits")
    wait_for(browser, "the limits", lambda: line.is_displayed() and "at most 1 active" in line.text)
    assert line.text == "Limits: at most 20 starts in 1 s; at most 1 active (0 now)"
    wq.start_worker()
    assert len(wq.internals.take_jobs("limited", [], 2)[1]) == 1  # the cap holds the second back
    wait_for(browser, "the hold", lambda: line.text.endswith("; held back now"))
    assert "at most 1 active (1 now)" in line.text
    assert "bad" in (line.get_attribute("class") or "")
    wq.configure_queue("limited", rate=None, max_active=None)
    wait_for(browser, "the limits gone", lambda: not line.is_displayed())


def test_a_queue_is_paused_and_resumed_by_its_button(
    browser: WebDriver, served: WebServer, wq: worqr.Worqr
) -> None:
    wq.submit("held", "a")
    browser.get(served.url.rstrip("/") + "/ui/queue?name=held")
    give_token(browser, TOKEN)
    button = browser.find_element(By.ID, "pause")
    line = browser.find_element(By.ID, "limits")
    wait_for(browser, "the pause button", lambda: button.is_displayed() and button.text == "pause")
    assert not line.is_displayed()
    button.click()
    wait_for(browser, "the pause", lambda: line.is_displayed() and button.text == "resume")
    assert line.text == "Paused: no job starts until it is resumed"
    assert wq.is_paused("held") and "bad" in (line.get_attribute("class") or "")
    wq.configure_queue("held", max_active=2)
    wait_for(browser, "the limits beside it", lambda: "at most 2 active" in line.text)
    assert line.text.startswith("Paused: no job starts until it is resumed. Limits: ")
    button.click()
    wait_for(browser, "the resume", lambda: button.text == "pause")
    assert not wq.is_paused("held")
    assert line.text == "Limits: at most 2 active (0 now)"


def test_bulk_buttons_by_state(browser: WebDriver, served: WebServer, wq: worqr.Worqr) -> None:
    """Run all now (delayed), cancel all (queued), retry all and purge all
    (cancelled): each acts on every job of the state shown and says how many."""
    wq.submit_many("bulky", [f"j{i}" for i in range(5)], delay=600)
    base = served.url.rstrip("/") + "/ui/queue?name=bulky&state="
    result = (By.ID, "bulk-result")

    browser.get(base + "delayed")
    give_token(browser, TOKEN)  # kept in the tab from now on

    def press(state: str, button: str, said: str, *, confirm: bool = False) -> None:
        browser.get(base + state)
        wait_for(
            browser,
            f"the {button} button",
            lambda: browser.find_element(By.ID, button).is_displayed(),
        )
        browser.find_element(By.ID, button).click()
        if confirm:
            browser.switch_to.alert.accept()
        wait_for(browser, said, lambda: browser.find_element(*result).text == said)

    press("delayed", "bulk-promote", "promoted 5")
    assert wq.count_jobs("bulky")["queued"] == 5
    cancel = browser.find_element(By.ID, "bulk-cancel")
    wait_for(browser, "no delayed job left", lambda: not cancel.is_displayed())
    press("queued", "bulk-cancel", "cancelled 5", confirm=True)
    press("cancelled", "bulk-retry", "retried 5")
    assert wq.count_jobs("bulky")["queued"] == 5
    assert wq.cancel_jobs("bulky") == 5
    press("cancelled", "bulk-purge", "purged 5", confirm=True)
    assert sum(wq.count_jobs("bulky").values()) == 0


def group_rows(driver: WebDriver) -> dict[str, dict[str, str]]:
    """The groups table shown, by group name (without the button's column)."""
    rows = [cells for cells in table(driver, "groups") if len(cells) == len(GROUP_COLUMNS)]
    return {cells[0]: dict(zip(GROUP_COLUMNS[1:-1], cells[1:-1], strict=True)) for cells in rows}


def test_a_queues_groups_show_their_limits_page_by_page_and_pause_by_button(
    browser: WebDriver, served: WebServer, wq: worqr.Worqr
) -> None:
    names = [f"tenant-{i:02}" for i in range(GROUPS_PAGE + 5)]
    for name in names:
        wq.submit("tenants", "x", group=name)
    wq.submit("tenants", "y", group="tenant-00")
    wq.configure_group("tenants", "tenant-00", rate=(5, 1.0), max_active=1)
    wq.start_worker()
    assert len(wq.internals.take_jobs("tenants", [], 1)[1]) == 1  # the first group takes one
    browser.get(served.url.rstrip("/") + "/ui/queue?name=tenants")
    give_token(browser, TOKEN)
    section = browser.find_element(By.ID, "groups-section")
    wait_for(browser, "the groups", lambda: section.is_displayed() and group_rows(browser))
    first = group_rows(browser)
    next_page = browser.find_element(By.ID, "groups-next")
    assert next_page.is_displayed()  # more groups than a page holds
    browser.find_element(By.ID, "groups-next").click()
    wait_for(browser, "the next page", lambda: set(group_rows(browser)) - set(first))
    wait_for(browser, "the last page", lambda: not next_page.is_displayed())
    second = group_rows(browser)
    assert set(first) | set(second) == set(names) and not set(first) & set(second)
    browser.find_element(By.ID, "groups-first").click()
    wait_for(browser, "the first page again", lambda: set(group_rows(browser)) == set(first))

    held = "tenant-00"  # the front of the rotation: the job taken is its, at its cap now
    assert wq.get_limits("tenants", group=held).active == 1
    if held not in first:  # the pages follow HSCAN's order
        browser.find_element(By.ID, "groups-next").click()
    wait_for(browser, "the limited group", lambda: held in group_rows(browser))
    row = group_rows(browser)[held]
    assert row == {
        "queued": "1",
        "delayed": "0",
        "active": "1",
        "rate": "5 in 1 s",
        "max active": "1",
        "now": "at its cap",
    }
    none = "\u2013"  # the view's dash for no value
    assert all(r["rate"] == none and r["now"] == "free" for n, r in first.items() if n != held)

    target = next(name for name in group_rows(browser) if name != held)

    def button() -> object:
        for cells in browser.find_elements(By.CSS_SELECTOR, "#groups tbody tr"):
            if cells.find_elements(By.TAG_NAME, "td")[0].text == target:
                return cells.find_element(By.CSS_SELECTOR, "button.group-pause")
        return None

    wait_for(browser, "the group's pause button", lambda: getattr(button(), "text", "") == "pause")
    button().click()  # type: ignore[attr-defined]
    wait_for(browser, "the pause", lambda: group_rows(browser)[target]["now"] == "paused")
    assert wq.is_paused("tenants", group=target) and not wq.is_paused("tenants")
    result = browser.find_element(By.ID, "group-result")
    assert result.text == f"group {target} paused"
    wait_for(browser, "the resume button", lambda: getattr(button(), "text", "") == "resume")
    button().click()  # type: ignore[attr-defined]
    wait_for(browser, "the resume", lambda: group_rows(browser)[target]["now"] == "free")
    assert not wq.is_paused("tenants", group=target)


def test_a_flow_parent_shows_under_waiting_once_the_queue_has_one(
    browser: WebDriver, served: WebServer, wq: worqr.Worqr
) -> None:
    wq.submit("plain", "x")
    browser.get(served.url.rstrip("/") + "/ui/queue?name=plain")
    give_token(browser, TOKEN)
    wait_for(browser, "the counts", lambda: card(browser, "queued") == "1")
    assert card(browser, "waiting") == ""  # no such job: no card

    flow = wq.submit_flow(worqr.FlowJob("report", "q3", children=[worqr.FlowJob("part", "1")]))
    parent = flow.root[1]
    browser.get(served.url.rstrip("/") + "/ui/queue?name=report&state=waiting")
    wait_for(browser, "the waiting card", lambda: card(browser, "waiting") == "1")
    wait_for(browser, "the parent listed", lambda: browser.find_elements(By.LINK_TEXT, parent))
