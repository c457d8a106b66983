"""The import contracts (docs/architecture.md) hold, and a broken one fails by name.

The contracts are ``[tool.importlinter]`` in pyproject.toml (import-linter): the core
(``srm_common.domain``, ``srm_common.control``) imports no client, adapter, framework or
I/O; no service imports another service or the launcher; srm_common's layers import only
downwards; no two sibling modules or packages import each other; a service's composition
root is imported only by its entry point, and the driver's runtime and REST API know the
task source and coordination ports, not the sources behind them; nothing but tests
imports the test harness (``srm_harness``). ``make lint`` runs the same check
(``lint-imports``). The second test builds a throw-away copy of the package layout with
one import that breaks each contract, so a contract that cannot fail would be seen.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_repository_keeps_every_import_contract() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, f"an import contract is broken:\n{done.stdout}{done.stderr}"
    assert "0 broken" in done.stdout, done.stdout


def test_each_contract_names_the_import_that_breaks_it(tmp_path: Path) -> None:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in settings["contracts"] if c["type"] == "layers")
    modules = {f"{package}.__init__" for package in settings["root_packages"]}
    for layer in layers["layers"]:
        for name in layer.replace("|", ":").split(":"):
            modules.add(f"srm_common.{name.strip().strip('()')}.__init__")
    breaking = {
        "srm_common.domain.bad": "import confluent_kafka\n",
        "srm_common.control.upward": "import srm_common.config\n",
        "srm_driver.peer": "import srm_coordinator\n",
        "srm_driver.one": "import srm_driver.two\n",
        "srm_driver.two": "import srm_driver.one\n",
        "srm_driver.runtime": "import srm_driver.bootstrap\n",
        "srm_driver.rest": "import srm_driver.coordinated_tasks\n",
        "srm_local.launcher": "import srm_harness.clients\n",
        "srm_harness.clients": "",
        # what the entry points may import (the contract's ignored imports)
        "srm_driver.cli": "import srm_driver.bootstrap\n",
        "srm_coordinator.cli": "import srm_coordinator.bootstrap\n",
        "srm_api_gateway.cli": "import srm_api_gateway.bootstrap\n",
        "srm_metrics_aggregator.cli": "import srm_metrics_aggregator.bootstrap\n",
    }
    roots = [c for c in settings["contracts"] if c["type"] == "forbidden"]
    for contract in roots:
        modules.update(
            f"{name}.__init__" if name.count(".") == 0 else name
            for name in (*contract["source_modules"], *contract["forbidden_modules"])
            if "*" not in name and name.split(".")[0] in settings["root_packages"]
        )
    for module in sorted(modules | set(breaking)):
        path = tmp_path.joinpath(*module.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.parents:
            if parent == tmp_path:
                break
            (parent / "__init__.py").touch()
        path.write_text(breaking.get(module, ""))
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())

    done = _lint(tmp_path, PYTHONPATH=str(tmp_path))

    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "Contracts: 1 kept, 7 broken." in out, out
    assert "srm_common.domain.bad -> confluent_kafka (l.1)" in out, out
    assert "srm_common.control.upward -> srm_common.config (l.1)" in out, out
    assert "srm_driver.peer -> srm_coordinator (l.1)" in out, out
    assert "No cycles are allowed in srm_driver." in out, out
    assert "srm_driver.runtime -> srm_driver.bootstrap (l.1)" in out, out
    assert "srm_driver.rest -> srm_driver.coordinated_tasks (l.1)" in out, out
    assert "srm_local.launcher -> srm_harness.clients (l.1)" in out, out
    for contract in settings["contracts"]:
        if contract["type"] != "forbidden" or "srm_common" not in contract["source_modules"]:
            assert f"{contract['name']} BROKEN" in " ".join(out.split()), out
