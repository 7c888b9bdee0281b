"""Waits (at most 60 s) until something accepts TCP connections on 127.0.0.1:PORT."""
import socket
import sys
import time

port = int(sys.argv[1])
deadline = time.monotonic() + 60
while True:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit(f"nothing listens on port {port}")
        time.sleep(0.1)
