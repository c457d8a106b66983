"""Free ports for local clusters, chosen below the kernel's ephemeral range, and whether
something answers on a port."""

from __future__ import annotations

import random
import socket
from pathlib import Path

from srm_local.errors import ClusterStartError


def free_port_pair(host: str = "127.0.0.1") -> int:
    """A port p such that p and p+1 are both free now (broker and controller), chosen
    below the kernel's ephemeral range: no client connection ever takes such a port as
    its source port, so a cluster restarted on its ports finds them free again (a port
    handed out by bind(0) could be taken by any outgoing connection meanwhile)."""
    return free_ports(2, host)[0]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` adjacent free ports below the ephemeral range (see free_port_pair)."""
    low, high = _below_ephemeral()
    for _ in range(500):
        port = random.randrange(low, high - count + 1)
        if all(_bindable(host, p) for p in range(port, port + count)):
            return list(range(port, port + count))
    raise ClusterStartError(f"could not find {count} adjacent free ports on loopback")


def _below_ephemeral() -> tuple[int, int]:
    """[low, high) under the first ephemeral port (Linux: ip_local_port_range)."""
    try:
        first = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first = 32768
    high = max(first, 12_000)
    return max(10_000, high - 12_000), high


def _bindable(host: str, port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return not port_open(host, port)


def port_open(host: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0
