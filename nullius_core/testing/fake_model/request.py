"""What rules and `respond` callables see of a request, and what the server records of each one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs


@attrs.frozen(kw_only=True)
class FakeRequest:
    """A model call as the script sees it.

    api: "chat", "responses", "messages", "count_tokens", "gemini" or "gemini_count_tokens"
    (Gemini's model is in the path; it streams as `:streamGenerateContent`).
    last_user_message: the text of the last user message (Chat: role "user";
    Responses: the last input item of role user; Messages: the text blocks of
    the last user message that has any). last_tool_result: the content of the
    tool result the request ends with, if it ends with one. last_message: that
    tool result when present, else the last user message.
    call: the model call's number (1-based) since the script was set.
    """

    api: str
    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: Any
    model: str | None
    stream: bool
    tools: tuple[str, ...]
    last_user_message: str | None
    last_tool_result: str | None
    call: int

    @property
    def last_message(self) -> str | None:
        return self.last_tool_result if self.last_tool_result is not None else self.last_user_message

    @property
    def include_usage(self) -> bool:
        """Chat Completions: the request set stream_options.include_usage."""
        options = self.body.get("stream_options") if isinstance(self.body, dict) else None
        return bool(isinstance(options, dict) and options.get("include_usage"))


@attrs.frozen(kw_only=True)
class RecordedRequest:
    """One request as received (header names in lower case). rule: which rule answered ("rules[2]", its name,
    "respond", "default"), None for a request no script saw (404, bad JSON)."""

    seq: int
    time: float
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    api: str | None
    rule: str | None
    status: int
    call: int | None = None

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self, recurse=False)


# --- reading the request bodies of the three shapes ------------------------


def _text_of(content: Any, kinds: tuple[str, ...] = ("text", "input_text", "output_text")) -> str | None:
    """A content value (a string, or a list of parts) as text; None when it has no text part."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type", "text") in kinds]
        texts = [t for t in texts if isinstance(t, str)]
        return "\n".join(texts) if texts else None
    return None


def _chat(body: dict[str, Any]) -> tuple[tuple[str, ...], str | None, str | None]:
    tools = tuple(
        t["function"].get("name", "")
        for t in body.get("tools") or ()
        if isinstance(t, dict) and isinstance(t.get("function"), dict)
    ) + tuple(f.get("name", "") for f in body.get("functions") or () if isinstance(f, dict))
    messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
    user = next((_text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), None)
    tool_result = None
    if messages and messages[-1].get("role") in ("tool", "function"):
        tool_result = _text_of(messages[-1].get("content")) or ""
    return tools, user, tool_result


def _responses(body: dict[str, Any]) -> tuple[tuple[str, ...], str | None, str | None]:
    tools = tuple(
        str(t.get("name") or t.get("type") or "") for t in body.get("tools") or () if isinstance(t, dict)
    )
    items = body.get("input")
    if isinstance(items, str):
        return tools, items, None
    items = [i for i in items or () if isinstance(i, dict)]
    user = next(
        (
            _text_of(i.get("content"))
            for i in reversed(items)
            if i.get("role") == "user" and i.get("type", "message") == "message"
        ),
        None,
    )
    tool_result = None
    if items and items[-1].get("type") in ("function_call_output", "custom_tool_call_output"):
        output = items[-1].get("output")
        tool_result = _text_of(output) or ""
    return tools, user, tool_result


def _messages(body: dict[str, Any]) -> tuple[tuple[str, ...], str | None, str | None]:
    tools = tuple(str(t.get("name", "")) for t in body.get("tools") or () if isinstance(t, dict))
    messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
    user = None
    for m in reversed(messages):
        if m.get("role") == "user":
            user = _text_of(m.get("content"), ("text",))
            if user is not None:
                break
    tool_result = None
    if messages and messages[-1].get("role") == "user" and isinstance(messages[-1].get("content"), list):
        results = [b for b in messages[-1]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            tool_result = _text_of(results[-1].get("content"), ("text",)) or ""
    return tools, user, tool_result


def gemini_text(content: Any) -> str | None:
    """A Gemini content's text parts joined (thoughts left out); None when it has none."""
    parts = content.get("parts") if isinstance(content, dict) else None
    texts = [p["text"] for p in parts or () if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")]
    return "\n".join(texts) if texts else None


def gemini_result(part: dict[str, Any]) -> str:
    """A functionResponse part's result as text: its `output` when a string (as Gemini CLI sends it), else its JSON."""
    response = (part.get("functionResponse") or {}).get("response")
    if isinstance(response, dict) and isinstance(response.get("output"), str):
        return response["output"]
    return json.dumps(response, ensure_ascii=False)


def _gemini(body: dict[str, Any]) -> tuple[tuple[str, ...], str | None, str | None]:
    tools = tuple(
        str(d.get("name", ""))
        for t in body.get("tools") or () if isinstance(t, dict)
        for d in t.get("functionDeclarations") or () if isinstance(d, dict)
    )
    contents = [c for c in body.get("contents") or () if isinstance(c, dict)]
    user = None
    for content in reversed(contents):
        if content.get("role", "user") == "user":
            user = gemini_text(content)
            if user is not None:
                break
    tool_result = None
    last = contents[-1].get("parts") if contents else None
    results = [p for p in last or () if isinstance(p, dict) and "functionResponse" in p]
    if results:
        tool_result = gemini_result(results[-1])
    return tools, user, tool_result


def _gemini_count(body: dict[str, Any]) -> tuple[tuple[str, ...], str | None, str | None]:
    inner = body.get("generateContentRequest")
    return _gemini(inner if isinstance(inner, dict) else body)


_READERS = {"chat": _chat, "responses": _responses, "messages": _messages, "count_tokens": _messages,
            "gemini": _gemini, "gemini_count_tokens": _gemini_count}


def read_request(
    api: str, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str], body: Any, call: int
) -> FakeRequest:
    data = body if isinstance(body, dict) else {}
    tools, user, tool_result = _READERS[api](data)
    model = data.get("model")
    stream = data.get("stream") is True and api != "count_tokens"
    if api.startswith("gemini"):  # the path says both: /v1beta/models/{model}:streamGenerateContent
        name, _, method = path.rpartition("/")[2].partition(":")
        model, stream = name, method == "streamGenerateContent"
    return FakeRequest(
        api=api,
        method=method,
        path=path,
        query=query,
        headers=headers,
        body=body,
        model=model if isinstance(model, str) else None,
        stream=stream,
        tools=tools,
        last_user_message=user,
        last_tool_result=tool_result,
        call=call,
    )
