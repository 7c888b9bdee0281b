"""Drives the gateway explorer's Call and Stop buttons in headless Chromium on a long stream.

    python3 .ci/explorer-stream.py http://127.0.0.1:PORT PROFILE_DIR

Opens the explorer on UserFeed.list_users with a count too large to finish, clicks Call, and
checks that the item count on the page grows while the stream runs (the items are shown as
they arrive, not when the body ends); then clicks Stop and checks that the page says the
stream was stopped and the count stays where it was. Chromium is driven through the DevTools
protocol over --remote-debugging-pipe (file descriptors 3 and 4, one JSON message per NUL),
which needs nothing beyond the standard library.
"""

import fcntl
import json
import os
import subprocess
import sys
import time
import urllib.parse

PATIENCE = 20  # seconds for any one condition, on a loaded machine


def above_four(fd):
    """The same pipe end as `fd`, on a descriptor number above 4 (`fd` is closed)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 5)
    os.close(fd)
    return moved


class Browser:
    """A headless Chromium and one page in it, driven over the DevTools pipe."""

    def __init__(self, profile):
        os.makedirs(profile, exist_ok=True)
        to_browser, self._commands = os.pipe()
        self._replies, from_browser = os.pipe()
        # The browser reads commands on fd 3 and writes replies on fd 4. Its ends of the pipes
        # move above 4 first, so that placing them cannot overwrite one another.
        to_browser, from_browser = (above_four(fd) for fd in (to_browser, from_browser))
        self._process = subprocess.Popen(
            [
                "sh", "-c",
                f'exec "$@" 3<&{to_browser} 4>&{from_browser} {to_browser}<&- {from_browser}>&-',
                "chromium", "chromium", "--headless", "--no-sandbox", "--disable-gpu",
                "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank",
            ],
            pass_fds=(to_browser, from_browser),
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(profile, "chromium.log"), "w"),
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffered = b""
        self._next_id = 0
        self._session = None

    def command(self, method, **params):
        """Sends one DevTools command and returns its result."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if self._session:
            message["sessionId"] = self._session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    sys.exit(f"{method}: {reply['error']}")
                return reply["result"]

    def _read(self):
        while b"\0" not in self._buffered:
            chunk = os.read(self._replies, 65536)
            if not chunk:
                sys.exit("chromium closed its DevTools pipe")
            self._buffered += chunk
        message, self._buffered = self._buffered.split(b"\0", 1)
        return json.loads(message)

    def open(self, url):
        target = self.command("Target.createTarget", url=url)["targetId"]
        self._session = self.command(
            "Target.attachToTarget", targetId=target, flatten=True
        )["sessionId"]

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page."""
        result = self.command(
            "Runtime.evaluate", expression=expression, returnByValue=True
        )["result"]
        return result.get("value")

    def wait_for(self, what, expression):
        """Waits until the expression is truthy in the page, and returns its value."""
        deadline = time.monotonic() + PATIENCE
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                sys.exit(f"timed out waiting for {what}; page status: {self.status()!r}")
            time.sleep(0.05)

    def status(self):
        return self.evaluate("document.getElementById('status').textContent")

    def item_count(self):
        return int(self.evaluate("document.getElementById('item-count').textContent"))

    def close(self):
        self._process.kill()
        self._process.wait()


def main():
    http, profile = sys.argv[1], sys.argv[2]
    query = urllib.parse.urlencode(
        {"service": "UserFeed", "method": "list_users", "args": '{"count":100000000}'}
    )
    browser = Browser(profile)
    try:
        browser.open(f"{http}/?{query}")
        browser.wait_for("the method list", "document.getElementById('method').value === 'UserFeed/list_users'")
        browser.evaluate("document.getElementById('call').click()")

        first = browser.wait_for(
            "the first items",
            "Number(document.getElementById('item-count').textContent) > 0 && "
            "document.getElementById('item-count').textContent",
        )
        status = browser.status()
        assert status == "HTTP 200, streaming...", status
        browser.wait_for(
            "more items",
            f"Number(document.getElementById('item-count').textContent) > {first}",
        )
        assert browser.status() == "HTTP 200, streaming...", browser.status()
        print(f"explorer: the item count grows while the stream runs ({first}, then {browser.item_count()})")

        browser.evaluate("document.getElementById('stop').click()")
        browser.wait_for("the stop", "document.getElementById('status').textContent === 'HTTP 200, stopped'")
        stopped_at = browser.item_count()
        time.sleep(0.5)
        assert browser.item_count() == stopped_at, "items came after Stop"
        assert browser.evaluate("document.getElementById('stop').disabled"), "Stop stays enabled"
        assert not browser.evaluate("document.getElementById('call').disabled"), "Call stays disabled"
        print(f"explorer: Stop ended the stream at {stopped_at} items")
    finally:
        browser.close()


main()
