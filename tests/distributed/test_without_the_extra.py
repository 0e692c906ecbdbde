"""temporalio is optional: nothing loads it unless runs go to Temporal, and without it
`backend = "temporal"` stops the process with the command that installs it.

"Without it" is a real interpreter whose import system refuses temporalio: a sitecustomize
on PYTHONPATH puts a finder first on sys.meta_path that raises ModuleNotFoundError for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = str(Path(sys.executable).parent / "harness")

_REFUSE = """
import sys

class RefuseTemporal:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "temporalio":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, RefuseTemporal())
"""

_LOADED = "print(sorted(m for m in sys.modules if m.split('.')[0] == 'temporalio'))"


@pytest.fixture
def without_temporal(tmp_path: Path) -> dict[str, str]:
    """The environment of a process that cannot import temporalio."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_REFUSE)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def home_with(tmp_path: Path, text: str) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "harness.toml").write_text(text)
    return home


def test_the_interpreter_really_cannot_import_temporalio(without_temporal: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import temporalio"],
        env=without_temporal,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "No module named 'temporalio'" in done.stderr


def test_a_temporal_backend_without_the_sdk_names_the_extra(
    tmp_path: Path, without_temporal: dict[str, str]
) -> None:
    home = home_with(tmp_path, '[runtime]\nbackend = "temporal"\n')
    env = {**without_temporal, "HARNESS_HOME": str(home)}
    done = subprocess.run(
        [HARNESS, "runs", "list"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2, done.stderr
    assert f"{home / 'harness.toml'}: key 'runtime.backend'" in done.stderr
    assert "pip install 'harness[temporal]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_embedded_backend_needs_no_sdk(
    tmp_path: Path, without_temporal: dict[str, str]
) -> None:
    home = home_with(tmp_path, '[runtime]\nbackend = "embedded"\n')
    env = {**without_temporal, "HARNESS_HOME": str(home)}
    done = subprocess.run(
        [HARNESS, "runs", "list", "--json"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "code",
    [
        "import harness",
        "import harness.runtime",
        "from harness import Agent, Harness, tool",
        "import harness.distributed.temporal",
        "from harness.runtime.settings import load_settings; load_settings()",
        "from harness.cli.app import main\nsys.argv = ['harness', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass",
    ],
    ids=["harness", "runtime", "public-names", "distributed", "settings", "help"],
)
def test_nothing_loads_temporalio_unless_runs_go_there(tmp_path: Path, code: str) -> None:
    """Even with backend = "temporal" configured: settings only check the SDK is there."""
    home = home_with(tmp_path, '[runtime]\nbackend = "temporal"\n')
    done = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\n{_LOADED}"],
        env={**os.environ, "HARNESS_HOME": str(home)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == "[]", done.stdout


def test_a_harness_made_in_python_names_the_extra_too(
    tmp_path: Path, without_temporal: dict[str, str]
) -> None:
    """Settings built in code skip load_settings: opening the Harness checks instead."""
    code = (
        "import asyncio\n"
        "from pathlib import Path\n"
        "from harness import Harness\n"
        "from harness.errors import ConfigError\n"
        "from harness.runtime import Settings\n"
        "from harness.runtime.runtime_settings import RuntimeSettings\n"
        "async def main():\n"
        "    runtime = RuntimeSettings(backend='temporal')\n"
        "    settings = Settings(home=Path(sys.argv[1]), runtime=runtime)\n"
        "    try:\n"
        "        async with Harness(settings):\n"
        "            print('opened')\n"
        "    except ConfigError as exc:\n"
        "        print(exc)\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}", str(tmp_path)],
        env=without_temporal,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "pip install 'harness[temporal]'" in done.stdout, done.stdout + done.stderr
