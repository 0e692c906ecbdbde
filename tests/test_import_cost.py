"""Defining an agent and a tool does not load what only running one needs.

`from harness import Agent, Harness, tool` is the first line of most programs, and a
command such as `harness --help` pays for it too: the event loop, the store, the sandbox,
the providers, the observability stack and their third-party libraries load where they are
first used (issue 13: that import within 120 ms). The check runs in a fresh interpreter
and names each heavy module that came back, with the line of harness that imported it.
No time is measured here; `python -X importtime -c "from harness import Agent"` shows
where the time goes.
"""

import subprocess
import sys

DEFERRED = (
    # the standard library's heavy parts: the event loop and what it pulls in
    "asyncio",
    "concurrent.futures",
    "ctypes",
    "hashlib",
    "logging",
    "pathlib",
    "socket",
    "sqlite3",
    "ssl",
    "subprocess",
    "tomllib",
    "uuid",
    # third-party libraries, each behind one module of harness
    "anthropic",
    "click",
    "httpx",
    "jsonschema",
    "openai",
    "opentelemetry",
    "orjson",
    "prometheus_client",
    "psycopg",
    "pydantic",
    "re2",
    "rich",
    "typer",
    # the parts of harness that run agents rather than define them
    "harness.agent.loop",
    "harness.agent.output",
    "harness.agent.strategies",
    "harness.core.codec",
    "harness.core.events",
    "harness.gateway.profiles",
    "harness.gateway.providers",
    "harness.gateway.wrappers",
    "harness.observability",
    "harness.runtime.executor",
    "harness.runtime.settings",
    "harness.store",
    "harness.tools.builtin",
    "harness.tools.mcp",
    "harness.tools.sandbox",
    "harness.tools.toolset",
)

# Records, for each module in WATCH, the innermost line of harness that first imported it.
_PROBE = """
import sys, traceback
WATCH = set(sys.argv[1:])
blame = {}

class Blame:
    def find_spec(self, name, path=None, target=None):
        if name in WATCH and name not in blame:
            ours = [f for f in traceback.extract_stack()[:-1] if "/harness/" in f.filename]
            where = ours[-1].filename if ours else "?"
            blame[name] = f"{where[where.rfind('/harness/') + 1:]}:{ours[-1].lineno if ours else 0}"
        return None

sys.meta_path.insert(0, Blame())
from harness import Agent, Harness, tool
for name in sorted(WATCH):
    if name in sys.modules:
        print(f"{name} (imported by {blame.get(name, 'the interpreter')})")
"""


def test_defining_an_agent_and_a_tool_loads_no_heavy_module() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *DEFERRED], capture_output=True, text=True, check=True
    )
    loaded = out.stdout.splitlines()
    assert not loaded, (
        "`from harness import Agent, Harness, tool` loaded modules that only running an agent "
        "needs; import them where they are first used (or under TYPE_CHECKING):\n  "
        + "\n  ".join(loaded)
    )


def test_the_deferred_names_still_resolve() -> None:
    code = (
        "import harness.agent, harness.gateway.model, harness.tools\n"
        "from harness import Agent, Harness, tool\n"
        "from harness.agent import AgentLoop\n"
        "from harness.tools import bash_tool, Toolset\n"
        "from harness.gateway.model import GatewayNotice, ModelObserver\n"
        "from harness.core.events import ModelFallback, ModelRetry\n"
        "assert GatewayNotice == ModelRetry | ModelFallback, GatewayNotice\n"
        "assert harness.agent.AgentLoop is AgentLoop and harness.tools.Toolset is Toolset\n"
        "assert 'AgentLoop' in dir(harness.agent)\n"
        "try:\n"
        "    harness.tools.no_such_name\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "module 'harness.tools' has no attribute 'no_such_name'"
