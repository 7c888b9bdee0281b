"""Drives the gateway explorer in headless Chromium through its buttons, as a user would.

    python3 .ci/explorer-stream.py http://127.0.0.1:PORT PROFILE_DIR

1. Opens a link that names UserService.get_user, its arguments and `call=1` (which used to call
   on opening): the page lists UserService and fills the form, but makes no call; clicking
   Call then shows the reply.
2. Opens UserFeed.list_users with a count of 3, clicks Call, and checks that the page shows
   the three items, the stream's trailers and its end.
3. Opens UserFeed.list_users with a count too large to finish, clicks Call, and checks that
   the item count on the page grows while the stream runs (the items are shown as they
   arrive, not when the body ends); then clicks Stop and checks that the page says the stream
   was stopped and the count stays where it was.

Chromium is driven through the DevTools protocol over --remote-debugging-pipe (file
descriptors 3 and 4, one JSON message per NUL), which needs nothing beyond the standard
library.
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


def explorer_url(http, service, method, args, **more):
    query = urllib.parse.urlencode({"service": service, "method": method, "args": args, **more})
    return f"{http}/?{query}"


def by_id(element, prop="textContent"):
    return f"document.getElementById('{element}').{prop}"


def open_ready(browser, url, method):
    """Opens the explorer at `url` and waits until it has loaded with `method` chosen."""
    browser.open(url)
    browser.wait_for(
        "the page to load",
        f"{by_id('status')} === 'ready' && {by_id('method', 'value')} === '{method}'",
    )


def a_link_fills_the_form_and_a_click_calls(browser, http):
    fanly = '{"user":{"user_id":1,"name":"fanly","age":18}}'
    open_ready(browser, explorer_url(http, "UserService", "get_user", fanly, call="1"), "UserService/get_user")
    services = browser.evaluate(by_id("services", "innerHTML"))
    assert "<li><strong>UserService</strong>" in services, services
    assert browser.evaluate(by_id("args", "value")) == fanly, "the link fills the arguments"
    # The page is loaded: a call on opening would have begun by now (it was made in the
    # same turn as the form was filled), and shown its status.
    assert browser.status() == "ready", f"no call on opening, but: {browser.status()!r}"
    assert browser.evaluate(by_id("reply")) == "", "no reply without a click"
    browser.evaluate(by_id('call', 'click()'))
    browser.wait_for("the reply", f"{by_id('status')} === 'HTTP 200'")
    reply = browser.evaluate(by_id("reply"))
    assert '"name": "fanly"' in reply, reply
    print("explorer: a link fills the form without calling; Call calls get_user and shows the reply")


def a_short_stream_shows_its_items(browser, http):
    open_ready(browser, explorer_url(http, "UserFeed", "list_users", '{"count":3}'), "UserFeed/list_users")
    browser.evaluate(by_id('call', 'click()'))
    browser.wait_for("the stream's end", f"{by_id('status')} === 'HTTP 200'")
    assert browser.item_count() == 3, browser.item_count()
    reply = browser.evaluate(by_id("reply"))
    assert '{"age":21,"name":"user3","user_id":3}' in reply, reply
    assert reply.endswith('trailers: {"listed":"3"}'), reply
    print("explorer: Call reads the UserFeed.list_users stream and shows its items and trailers")


def stop_ends_a_long_stream(browser, http):
    url = explorer_url(http, "UserFeed", "list_users", '{"count":100000000}')
    open_ready(browser, url, "UserFeed/list_users")
    browser.evaluate(by_id('call', 'click()'))

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


def main():
    http, profile = sys.argv[1], sys.argv[2]
    browser = Browser(profile)
    try:
        a_link_fills_the_form_and_a_click_calls(browser, http)
        a_short_stream_shows_its_items(browser, http)
        stop_ends_a_long_stream(browser, http)
    finally:
        browser.close()


main()
