"""A Spark standalone cluster from the PySpark install: one master and N workers, local
processes on loopback (tests and docs/scaling.md's "run it here").

The workers launch executors for a driver that connects with ``--spark-master
spark://127.0.0.1:<port>``; an executor's Python workers run the interpreter the driver
names (``PYSPARK_PYTHON``, the driver's own), which exists here at the same path.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from srm_local.ports import free_ports


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class SparkStandalone:
    """``start()``, use ``master_url``, ``stop()``; logs and work dirs under ``folder``."""

    folder: Path
    workers: int = 2
    cores: int = 1
    memory: str = "1g"
    master_url: str = ""
    web_url: str = ""
    _processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _earlier_apps: set[Path] = field(default_factory=set)

    def start(self, timeout: float = 120) -> SparkStandalone:
        self.folder.mkdir(parents=True, exist_ok=True)
        port, web = free_ports(2)
        self.master_url = f"spark://127.0.0.1:{port}"
        self.web_url = f"http://127.0.0.1:{web}"
        self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(web)],
        )
        for _ in range(self.workers):
            self.add_worker(wait=False)
        self.wait_workers(self.workers, timeout)
        return self

    def add_worker(self, *, wait: bool = True, timeout: float = 120) -> str:
        """Start one more worker (``worker-<n>``, n counting every worker ever started);
        with ``wait``, until the master counts it alive. Its name."""
        name = f"worker-{len(self._workers)}"
        (worker_web,) = free_ports(1)
        work = self.folder / name
        self._workers[name] = self._spawn(
            name,
            "org.apache.spark.deploy.worker.Worker",
            ["--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
             "--webui-port", str(worker_web), "--work-dir", str(work), self.master_url],
        )  # fmt: skip
        if wait:
            self.wait_workers(self.alive_workers() + 1, timeout)
        return name

    def wait_workers(self, count: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while self.alive_workers() < count:
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(
                    f"the Spark master at {self.master_url} has {self.alive_workers()} of"
                    f" {count} workers after {timeout:.0f} s; see {self.folder}/*.log"
                )
            time.sleep(0.5)

    def kill_worker(self, name: str) -> list[int]:
        """``kill -9`` the worker ``name`` and every process under it: its executors' JVMs
        and their Python workers (PySpark's daemon makes a process group of its own, so
        the tree is walked, not the group). The pids killed."""
        root = self._workers[name].pid
        pids = [root, *_descendants(root)]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self._workers[name].wait(10)
        return pids

    def worker_pids(self) -> list[tuple[str, int]]:
        """(name, pid) of every worker started, in start order: the root of its process
        tree (its executors' JVMs and their Python workers are below it)."""
        return [(name, process.pid) for name, process in self._workers.items()]

    def untouched(self) -> bool:
        """Its first workers only, all alive: as :meth:`start` left it (no worker killed
        or added since)."""
        return len(self._workers) == self.workers and self.alive_workers() == self.workers

    def forget_earlier_apps(self) -> None:
        """From now on the executor logs read are those of applications started after
        this call: each test of a cluster that several share reads its own driver's."""
        self._earlier_apps = {app for app in self.folder.glob("worker-*/*") if app.is_dir()}

    def executor_log(self, worker: str) -> str:
        """The stderr of every executor the worker ``worker`` ran, concatenated."""
        return self._read((self.folder / worker).rglob("stderr"))

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"{self.web_url}/json/", timeout=2) as answer:
                state = json.loads(answer.read())
        except OSError:
            return 0
        return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")

    def executor_logs(self) -> str:
        """Every executor's stderr (the Python copy slots log there), concatenated."""
        return self._read(self.folder.glob("worker-*/*/*/stderr"))

    def _read(self, stderrs: Iterable[Path]) -> str:
        """``<work dir>/<application>/<executor>/stderr`` files, but not those of an
        application of before :meth:`forget_earlier_apps`, concatenated."""
        return "\n".join(
            path.read_text(errors="replace")
            for path in sorted(stderrs)
            if path.parent.parent not in self._earlier_apps
        )

    def stop(self) -> None:
        for process in reversed(self._processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self._processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        self._processes.clear()

    def _spawn(self, name: str, main_class: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = (self.folder / f"{name}.log").open("ab")
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(spark_home())}
        env.pop("SPARK_CONF_DIR", None)
        process = subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), main_class, *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
        log.close()
        self._processes.append(process)
        return process


def _descendants(root: int) -> list[int]:
    """Every live process below ``root`` (from ``/proc``: Linux)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = text[text.rfind(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
