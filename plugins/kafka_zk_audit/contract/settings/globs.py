"""The glob patterns of the settings (a suppression's ``topic`` and ``group_id``) as regular expressions.

``glob_to_regex`` writes one anchored regex that Python and Java (Spark) read alike.
"""

from __future__ import annotations


def glob_to_regex(pattern: str) -> str:
    """An fnmatch-style glob (*, ?, [abc], [!abc]) as an anchored regex valid for Java and Python."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        i += 1
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            start = i + 1 if pattern[i : i + 1] == "!" else i
            start = start + 1 if pattern[start : start + 1] == "]" else start
            end = pattern.find("]", start)
            if end < 0:
                out.append(r"\[")
                continue
            body = pattern[i:end]
            i = end + 1
            negate = body.startswith("!")
            if negate:
                body = body[1:]
            escaped = "".join("\\" + c if c in "\\[]^&" else c for c in body)
            out.append("[" + ("^" if negate else "") + escaped + "]")
        elif char.isalnum() or char == "_":
            out.append(char)
        else:
            out.append("\\" + char if ord(char) < 128 else char)
    return "^" + "".join(out) + "$"
