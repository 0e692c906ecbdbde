"""`harness demo`: a realistic run with a scripted model, so that no LLM is needed.

The model's replies are fixed below; everything else is real: the loop, the runtime and its
events, argument validation, and the bash tool working on files in a demo workspace.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

from harness.agent.spec import AgentSpec
from harness.cli.render import LiveRenderer, print_note
from harness.core.messages import Message
from harness.core.results import RunResult
from harness.gateway.model import ModelRequest
from harness.gateway.scripted import FunctionModel, call, reply
from harness.runtime.harness import Harness
from harness.runtime.settings import load_settings
from harness.tools import bash_tool
from harness.tools.approvals import ApprovalDecision, ApprovalRequest
from harness.tools.sandbox import Sandbox

__all__ = ["DEMO_TASK", "demo_model", "prepare_workspace", "run_demo"]

DEMO_TASK = "Which Python file in this project has the most lines, and how many lines is that?"

_FILES = {
    "app/__init__.py": '"""A tiny app."""\n',
    "app/server.py": "".join(f"def handler_{i}(request):\n    return {i}\n\n" for i in range(40)),
    "app/models.py": "".join(f"class Model{i}:\n    pass\n\n" for i in range(12)),
    "tests/test_server.py": "def test_ok():\n    assert True\n",
    "README.md": "# demo project\n",
}


def prepare_workspace(root: Path) -> Path:
    """Fill `root` with a small project for the demo to explore."""
    for name, text in _FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _workspace(sandbox: Sandbox, home: Path) -> Path:
    if sandbox.probe().available:
        return sandbox.prepare_workspace(prepare_workspace(sandbox.make_workspace()))
    root = home.resolve() / "demo-workspace"
    if root.exists():
        shutil.rmtree(root)
    return prepare_workspace(root)


async def _approve_scripted_commands(request: ApprovalRequest) -> ApprovalDecision:
    """Without a sandbox, only the demo's own fixed commands may run on the host."""
    command = json.loads(request.arguments).get("command", "")
    allowed = command in _SCRIPTED_COMMANDS
    return ApprovalDecision(approved=allowed, by="demo", reason=None if allowed else "not scripted")


_LIST = "find . -name '*.py' | sort"
_COUNT = "wc -l $(find . -name '*.py') | sort -n"
_SCRIPTED_COMMANDS = frozenset({_LIST, _COUNT})


def _script(request: ModelRequest) -> Message:
    results = [m for m in request.messages if m.role == "tool"]
    if not results:
        return reply(
            "I'll list the Python files first.",
            call("bash", {"command": _LIST}),
        )
    if len(results) == 1:
        # A deliberate mistake: the argument is called `command`, not `cmd`.
        return reply(
            "Now I'll count their lines.", call("bash", {"cmd": "wc -l $(find . -name '*.py')"})
        )
    if len(results) == 2:
        return reply(
            "The tool says the argument is named `command`; retrying with it.",
            call("bash", {"command": _COUNT}),
        )
    return reply(_answer(results[-1].content or ""))


def _answer(wc_output: str) -> str:
    rows = re.findall(r"^\s*(\d+)\s+(\S+)$", wc_output, flags=re.MULTILINE)
    files = [(int(n), name) for n, name in rows if name != "total"]
    if not files:
        return "I could not read the line counts from the tool output."
    lines, name = max(files)
    total = sum(n for n, _ in files)
    return (
        f"`{name.removeprefix('./')}` is the largest Python file with {lines} lines "
        f"({total} lines across {len(files)} Python files)."
    )


def demo_model() -> FunctionModel:
    """The scripted model the demo runs with."""
    return FunctionModel(_script, name="scripted-demo-model")


def run_demo() -> int:
    """Run the demo and return the process exit code."""
    settings = load_settings()
    sandbox = Sandbox()
    status = sandbox.probe()
    workspace = _workspace(sandbox, settings.home)
    print_note(
        "harness demo: the model is SCRIPTED (its replies are fixed in harness/cli/demo.py);"
        " the loop, the runtime, validation and the bash tool are real."
    )
    if status.available:
        print_note(f"bash runs in the bubblewrap sandbox; workspace: {workspace}")
    else:
        print_note(
            f"No sandbox works here ({status.detail.strip()}); fix: {status.fix}. The demo "
            f"runs its two fixed commands on the host, in {workspace}, each approved by the demo."
        )
    bash = bash_tool(cwd=workspace, sandbox=sandbox, allow_unsandboxed=not status.available)
    agent = AgentSpec(name="demo", model=demo_model(), tools=[bash], workspace=workspace)
    harness = Harness(settings, approver=_approve_scripted_commands, adopt=False)
    result = asyncio.run(_run(harness, agent))
    print_note(
        'Next: point it at a real model, e.g. `harness run "..."` with llama.cpp on '
        'port 8080, or `harness run --model openai:MODEL --base-url URL "..."`.'
    )
    return 0 if result.ok else 1


async def _run(harness: Harness, agent: AgentSpec) -> RunResult:
    async with harness:
        return await harness.run(agent, DEMO_TASK, on_event=LiveRenderer())
