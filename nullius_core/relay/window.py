"""A call the model's context window refused, by what its error says, in each provider's words.

OpenAI and Responses name it `context_length_exceeded`; Anthropic says
`prompt is too long: N tokens > M maximum`; OpenRouter `This endpoint's
maximum context length is N tokens`; Gemini `The input token count (N)
exceeds the maximum number of tokens allowed`. A server error is never one.
"""

from __future__ import annotations

import re
from typing import Any

_SAID = re.compile(
    r"context[_ ]length|context[_ ]window|maximum context|prompt is too long|input token count \(?\d+\)? exceeds|too many (input )?tokens",
    re.IGNORECASE,
)


def refused_for_window(status: Any, error: dict[str, Any] | None) -> bool:
    if not error or (isinstance(status, int) and status >= 500):
        return False
    return bool(_SAID.search(" ".join(str(error.get(key) or "") for key in ("code", "type", "message"))))
