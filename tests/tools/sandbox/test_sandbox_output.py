"""Head and tail capture and text cleaning, without a sandbox."""

from __future__ import annotations

from harness.tools.sandbox.output import OutputBuffer, clean_text


def fed(data: bytes, *, head: int = 8, tail: int = 8, chunk: int = 3) -> OutputBuffer:
    buffer = OutputBuffer(head=head, tail=tail)
    for start in range(0, len(data), chunk):
        buffer.feed(data[start : start + chunk])
    return buffer


def test_short_output_is_kept_whole() -> None:
    buffer = fed(b"0123456789abcdef")
    assert buffer.total == 16
    assert buffer.omitted == 0
    assert buffer.text() == "0123456789abcdef"


def test_long_output_keeps_head_and_tail_and_counts_the_rest() -> None:
    data = bytes(range(65, 91)) * 40  # 1040 bytes of A..Z
    buffer = fed(data, chunk=7)
    assert buffer.total == 1040
    assert buffer.omitted == 1040 - 16
    head, marker, tail = buffer.text().split("\n")
    assert head == data[:8].decode()
    assert marker == "[... 1024 bytes omitted ...]"
    assert tail == data[-8:].decode()


def test_one_huge_chunk_is_split_between_head_and_tail() -> None:
    buffer = fed(b"h" * 8 + b"x" * 100 + b"t" * 8, chunk=1000)
    assert buffer.text() == "hhhhhhhh\n[... 100 bytes omitted ...]\ntttttttt"


def test_utf8_cut_at_the_edges_is_dropped_not_replaced() -> None:
    data = "aaaaaaaé".encode() + b"-" * 50 + "éaaaaaaa".encode()  # é is 2 bytes
    text = fed(data, head=8, tail=8).text()
    assert "\ufffd" not in text
    assert text.startswith("aaaaaaa\n[...")
    assert text.endswith("]\naaaaaaa")


def test_invalid_utf8_is_replaced() -> None:
    assert clean_text(b"ok \xff\xfe bad \xc3\x28 caf\xc3\xa9") == "ok \ufffd\ufffd bad \ufffd( café"


def test_control_characters_are_stripped_but_newline_and_tab_kept() -> None:
    raw = b"nul[\x00] bell[\x07] bs[\x08] del[\x7f] cr[\r] tab[\t]\r\nnext\n"
    assert clean_text(raw) == "nul[] bell[] bs[] del[] cr[] tab[\t]\nnext\n"


def test_ansi_sequences_are_removed_whole() -> None:
    raw = b"\x1b[31mred\x1b[0m \x1b]0;title\x07plain \x1b[2K\x1b[1Gline"
    assert clean_text(raw) == "red plain line"
