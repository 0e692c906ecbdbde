"""The helpers that let tools say what to try next, as a tool author uses them."""

from __future__ import annotations

import json

from harness.core import Limits, ToolCall
from harness.errors import ToolError
from harness.tools import Toolset, feedback, tool
from harness.tools.feedback import close_matches, did_you_mean, empty_result, not_found

ORDERS = {"A-1001": "shipped", "A-1002": "packed", "B-2001": "cancelled"}


def test_close_matches_best_first() -> None:
    assert close_matches("A-1010", ORDERS) == ["A-1001", "A-1002"]
    assert close_matches("zzz", ORDERS) == []
    assert "A-1001" not in close_matches("A-1001", ORDERS)  # the word itself is no suggestion


def test_close_matches_finds_another_case_first() -> None:
    assert close_matches("readme.md", ["src", "README.md", "readme.rst"])[0] == "README.md"


def test_close_matches_bounds() -> None:
    names = [f"file_{n}.txt" for n in range(20)]
    assert len(close_matches("file_1.txt", names, n=2)) == 2
    assert close_matches("file_1.txt", names, cutoff=0.99) == []


def test_did_you_mean_sentences() -> None:
    assert did_you_mean("mian.py", ["main.py", "setup.py"]) == "Did you mean 'main.py'?"
    assert did_you_mean("A-1010", ORDERS) == "Did you mean 'A-1001' or 'A-1002'?"
    three = did_you_mean("data", ["data1", "data2", "data3"])
    assert three == "Did you mean 'data1', 'data2' or 'data3'?"
    assert did_you_mean("q", ["alpha"]) == ""


def test_did_you_mean_shows_candidates_its_own_way() -> None:
    text = did_you_mean("mian.py", ["main.py"], show=lambda name: f"src/{name}")
    assert text == "Did you mean 'src/main.py'?"


def test_not_found_names_the_thing_suggests_and_says_how_to_look() -> None:
    error = not_found("order", "A-1010", ORDERS, try_instead="recent_orders lists them")
    assert isinstance(error, ToolError)
    assert error.message == "There is no order 'A-1010'."
    assert error.hint == "Did you mean 'A-1001' or 'A-1002'? recent_orders lists them."


def test_not_found_without_anything_close() -> None:
    error = not_found("column", "qqq", ["price", "name"], try_instead="Call describe_table.")
    assert error.hint == "Call describe_table."


def test_empty_result_says_what_and_what_next() -> None:
    text = empty_result(
        "No orders in the last 7 days", try_instead="Ask for a longer period, e.g. days=30"
    )
    assert text == "No orders in the last 7 days. Ask for a longer period, e.g. days=30."
    assert empty_result("Nothing matched.", try_instead="Widen the filter!") == (
        "Nothing matched. Widen the filter!"
    )


async def test_a_tool_using_the_helpers_reaches_the_model() -> None:
    @tool(side_effects="none")
    def order_status(order_id: str) -> str:
        """Status of one order."""
        if order_id not in ORDERS:
            raise not_found("order", order_id, ORDERS, try_instead="recent_orders lists them.")
        return ORDERS[order_id]

    @tool(side_effects="none")
    def orders_since(days: int) -> str:
        """Orders of the last days."""
        return empty_result(
            f"No orders in the last {days} days", try_instead="Ask for more days, e.g. days=30"
        )

    toolset = Toolset([order_status, orders_since])
    missing = await toolset.execute(
        ToolCall(id="c1", name="order_status", arguments=json.dumps({"order_id": "A-1010"})),
        limits=Limits(),
    )
    assert missing.status == "tool_error"
    assert missing.message.content == (
        "Tool 'order_status' failed: There is no order 'A-1010'.\n"
        "Hint: Did you mean 'A-1001' or 'A-1002'? recent_orders lists them."
    )
    empty = await toolset.execute(
        ToolCall(id="c2", name="orders_since", arguments='{"days": 7}'), limits=Limits()
    )
    assert empty.status == "ok"
    assert empty.message.content == "No orders in the last 7 days. Ask for more days, e.g. days=30."


def test_an_unknown_tool_gets_the_closest_names() -> None:
    assert "Did you mean 'read_file'?" in feedback.unknown_tool("read_fil", ["read_file", "bash"])
