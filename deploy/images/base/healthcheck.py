#!/usr/bin/python3
"""Container health checks without starting a JVM or installing a client.

    srm-healthcheck kafka HOST:PORT   a Kafka broker answers an ApiVersions request
    srm-healthcheck http URL          an HTTP GET answers 2xx

Exit 0 when healthy, 1 with the reason on stderr otherwise (docker shows the output).
A broker answers requests only once it has started (KRaft: caught up with the metadata
log), so an answer is a fair "ready".
"""

import socket
import struct
import sys
import urllib.request

TIMEOUT = 5


def kafka(address: str) -> None:
    host, _, port = address.rpartition(":")
    client = b"srm-healthcheck"
    # ApiVersions (key 18) version 0, correlation id 1, client id as an int16 string.
    body = struct.pack(">hhih", 18, 0, 1, len(client)) + client
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as conn:
        conn.sendall(struct.pack(">i", len(body)) + body)
        header = _read(conn, 4)
        size = struct.unpack(">i", header)[0]
        correlation, error = struct.unpack(">ih", _read(conn, min(size, 6)))
    if correlation != 1 or error != 0:
        raise RuntimeError(f"ApiVersions answered correlation {correlation}, error {error}")


def _read(conn: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = conn.recv(count - len(data))
        if not chunk:
            raise RuntimeError("the broker closed the connection")
        data += chunk
    return data


def http(url: str) -> None:
    with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
        if not 200 <= response.status < 300:
            raise RuntimeError(f"HTTP {response.status}")


def main() -> int:
    checks = {"kafka": kafka, "http": http}
    if len(sys.argv) != 3 or sys.argv[1] not in checks:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        checks[sys.argv[1]](sys.argv[2])
    except (OSError, RuntimeError, ValueError) as exc:
        print(f"{sys.argv[1]} {sys.argv[2]}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
