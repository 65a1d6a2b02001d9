"""Headless Chromium on Superset: log in, open saved table charts, save a PNG of each, print what they show.

Run by ``tests/integration/test_superset.py`` with the Python of ``.venv-superset``, whose
Selenium is a dependency of Superset; the browser and its driver are the OS's (Debian:
``chromium``, ``chromium-driver``), so nothing is downloaded. Usage::

    superset_browser.py BASE_URL USER PASSWORD OUT_DIR CHART_ID...

prints one JSON object: for each chart id, the header cells and body rows of the table the
chart rendered (the text the page shows) and the path of its screenshot.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1600,1000"]
CHART = ".chart-container"


def table(driver: webdriver.Chrome) -> tuple[list[str], list[list[str]]]:
    """The chart's header and body cells as shown, read in one script (React may replace the table between
    two reads). The table chart draws its sticky header as a table of its own: every table of the chart counts,
    hidden header copies (no text) do not."""
    read = driver.execute_script("""
        const chart = document.querySelector(arguments[0]);
        if (!chart) return [[], []];
        const text = (cells) => Array.from(cells, (cell) => cell.innerText.trim());
        return [text(chart.querySelectorAll('table thead th')).filter((head) => head !== ''),
                Array.from(chart.querySelectorAll('table tbody tr'), (row) => text(row.querySelectorAll('td')))
                     .filter((cells) => cells.length > 0)];
    """, CHART)
    return read[0], read[1]


def rendered(driver: webdriver.Chrome, timeout: float) -> tuple[list[str], list[list[str]]]:
    """The chart's table once it has rows and two reads a second apart agree."""
    WebDriverWait(driver, timeout).until(
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, f"{CHART} table tbody tr td")))
    deadline, last = time.monotonic() + timeout, table(driver)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = table(driver)
        if now == last and now[1]:
            return now
        last = now
    raise TimeoutError(f"the chart's table did not settle within {timeout} s: {last}")


def main(base: str, user: str, password: str, out: Path, *charts: str) -> None:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={tempfile.mkdtemp(prefix='chromium-', dir=out)}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get(f"{base}/login/")
        wait = WebDriverWait(driver, 120)
        wait.until(expected_conditions.presence_of_element_located((By.ID, "username"))).send_keys(user)
        driver.find_element(By.ID, "password").send_keys(password, Keys.ENTER)
        wait.until(lambda d: "/login" not in d.current_url)
        shown = {}
        for chart in charts:
            started = time.monotonic()
            driver.get(f"{base}/explore/?slice_id={chart}")
            heads, rows = rendered(driver, 300)
            png = out / f"superset-chart-{chart}.png"
            driver.save_screenshot(str(png))
            shown[chart] = {"headers": heads, "rows": rows, "png": str(png),
                            "seconds": round(time.monotonic() - started, 1)}
        print(json.dumps(shown))
    finally:
        driver.quit()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]), *sys.argv[5:])
