import subprocess
import sys

import harness


def test_public_names_are_pinned() -> None:
    assert harness.__all__ == sorted(harness.__all__)
    assert set(harness.__all__) == {
        "Agent",
        "ConfigError",
        "Harness",
        "HarnessError",
        "Limits",
        "Message",
        "Model",
        "ModelError",
        "ModelRequest",
        "ModelResponse",
        "ModelSettings",
        "RunEvent",
        "RunResult",
        "ToolCall",
        "ToolError",
        "ToolSpec",
        "Toolset",
        "Usage",
        "__version__",
        "resolve_model",
        "tool",
    }
    for name in harness.__all__:
        assert getattr(harness, name) is not None


def test_importing_harness_loads_no_provider_sdk_and_does_no_io() -> None:
    code = (
        "import sys, harness\n"
        "heavy = ('openai', 'anthropic', 'rich', 'typer', 'httpx', 'pydantic', 'jsonschema')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
