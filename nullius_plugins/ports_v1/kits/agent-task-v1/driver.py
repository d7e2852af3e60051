"""Driver of the agent.task/v1 kit: one JSON request per line on stdin, one JSON reply per line on stdout.

Three checks (word-1, word-2, word-3), each "reply with one exact word". Every
`setup` draws a fresh secret seed (never sent anywhere) and derives a made-up
word from it; the prompt gives the word and asks for it alone as the agent's
final message. The seed stays in this process, keyed by (unit, dir), until
`score`; a second setup of the same unit draws a new one.

`score` passes when the answer (the agent's last message), trimmed, stripped
of surrounding quotes or backticks and of a trailing period, is the word,
case-sensitively. Standard library only; logs go to stderr.
"""

import os
import secrets
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import kitlib  # noqa: E402 - the kits' shared module, beside them

DATASET = "checks"
CHECKS = ["word-1", "word-2", "word-3"]


PROMPTS = {
    "word-1": "Reply with exactly this word and nothing else: {word}",
    "word-2": (
        "Your whole reply must be the single word below, spelled exactly as it is written here, "
        "with no other words, punctuation or formatting.\n\n{word}"
    ),
    "word-3": (
        "This is a check that you can repeat a made-up word exactly. The word is {word}. "
        "End by sending that word alone, with the same letters and the same case, as your final message."
    ),
}

# Pairs stripped from around an answer before comparing: quotes and backticks.
_SETUPS = kitlib.Setups()


def log(*parts):
    print("[agent-task-v1]", *parts, file=sys.stderr, flush=True)




def check_request(request):
    return kitlib.check_request(request, CHECKS, DATASET)


def state_of(request):
    key = check_request(request)
    return _SETUPS.get(key)


def setup(request):
    key = check_request(request)
    seed = secrets.token_hex(16)
    word = kitlib.made_up_word(seed, key[0])
    _SETUPS.put(key, {"seed": seed, "word": word})
    log(f"setup {key[0]}: a fresh seed drawn")
    return {"prompt": PROMPTS[key[0]].format(word=word)}


def score(request):
    word = state_of(request)["word"]
    answer = request.get("answer")
    if not isinstance(answer, str):
        raise ValueError("expected answer, the agent's last message, as a string")
    found = kitlib.normalise(answer)
    passed = found == word
    detail = {
        "expected": word,
        "found": found[:200],
        "rule": "the last message, trimmed, without surrounding quotes or backticks and a trailing period, "
                "equals the word (case-sensitive)",
    }
    if not passed and found.lower() == word.lower():
        detail["note"] = "the same word in another case"
    return {"reward": 1.0 if passed else 0.0, "passed": passed, "detail": detail}


def oracle(request):
    return {"answer": state_of(request)["word"]}


def main():
    kitlib.serve({"setup": setup, "oracle": oracle, "score": score}, CHECKS, DATASET)


if __name__ == "__main__":
    main()
