"""Driver of the agent.conversation/v1 kit: one JSON request per line on stdin, one JSON reply per line on stdout.

One check, recall-turn-1. `setup` draws a fresh secret seed (kept in this
process, keyed by (unit, dir); never sent anywhere) and derives a made-up code
word from it. Turn 1, setup's prompt, gives the code word and asks the agent
only to acknowledge it. Turn 2, from `turn`, asks what the code word was,
without repeating it. After the agent's second reply, `turn` says done.

The `turn` op (besides units, setup, oracle and score of docs/drivers.md):

    request  {"op": "turn", "unit": ID, "dir": WORKSPACE, "dataset": "checks",
              "transcript": [{"role": "user" | "agent", "text": STRING}, ...]}
    reply    {"message": STRING}   the next user message, sent in the same session
          or {"done": true}        the conversation is over; the answer is the agent's last message

`unit` and `dir` are those of the unit's setup. `transcript` is the whole
conversation so far, in order: setup's prompt first (role "user"), then each
agent reply (role "agent") and each message `turn` gave (role "user"); it
ends with the agent's latest reply. Nullius calls `turn` after every agent
reply. This kit answers by the number of agent replies in the transcript:
after 1, the recall question; after 2 or more, done. A transcript with no
agent reply, or with another role, is an error.

`score` reads `answer`, the agent's last message. It passes when the answer
holds the code word as a whole word (any case) and this driver asked the
recall question for this (unit, dir) through `turn`, or gave the reference
through `oracle` (the controls have no turns). A one-turn run, where `turn`
was never called, fails with that said in the detail.

Standard library only; logs go to stderr.
"""

import os
import re
import secrets
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import kitlib  # noqa: E402 - the kits' shared module, beside them

DATASET = "checks"
CHECKS = ["recall-turn-1"]
ROLES = ("user", "agent")


FIRST = (
    "Please remember this code word for later in our conversation: {word}. "
    "For now, only acknowledge that you have it; there is nothing else to do yet."
)
RECALL = "What was the code word I gave you in my first message? Reply with the code word alone."

_SETUPS = kitlib.Setups()


def log(*parts):
    print("[agent-conversation-v1]", *parts, file=sys.stderr, flush=True)



def check_request(request):
    return kitlib.check_request(request, CHECKS, DATASET)


def state_of(request):
    key = check_request(request)
    return _SETUPS.get(key)


def setup(request):
    key = check_request(request)
    seed = secrets.token_hex(16)
    word = kitlib.made_up_word(seed, "code-word")
    _SETUPS.put(key, {"seed": seed, "word": word, "asked": False, "reference": False})
    log(f"setup {key[0]}: a fresh seed drawn")
    return {"prompt": FIRST.format(word=word)}


def turn(request):
    state = state_of(request)
    transcript = request.get("transcript")
    if not isinstance(transcript, list) or not transcript:
        raise ValueError("expected transcript, the conversation so far, as a non-empty list of {role, text}")
    for i, entry in enumerate(transcript):
        if not isinstance(entry, dict) or entry.get("role") not in ROLES or not isinstance(entry.get("text"), str):
            raise ValueError(f"transcript[{i}]: expected {{role: \"user\" or \"agent\", text: string}}, found {entry!r}"[:300])
    replies = sum(1 for entry in transcript if entry["role"] == "agent")
    if replies == 0:
        raise ValueError("the transcript has no agent reply yet: turn comes after the agent's reply")
    if replies == 1:
        state["asked"] = True
        log("turn: the recall question")
        return {"message": RECALL}
    log(f"turn: done after {replies} agent replies")
    return {"done": True}


def score(request):
    state = state_of(request)
    answer = request.get("answer")
    if not isinstance(answer, str):
        raise ValueError("expected answer, the agent's last message, as a string")
    word = state["word"]
    recalled = re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", answer, re.IGNORECASE) is not None
    asked = state["asked"] or state["reference"]
    passed = recalled and asked
    detail = {
        "expected": word,
        "found": answer.strip()[:300],
        "recalled": recalled,
        "asked": state["asked"],
        "rule": "the last message holds the code word as a whole word (any case), after turn 2 asked for it",
    }
    if not asked:
        detail["note"] = "the recall question was never asked: no turn op came for this unit"
    return {"reward": 1.0 if passed else 0.0, "passed": passed, "detail": detail}


def oracle(request):
    state = state_of(request)
    state["reference"] = True
    return {"answer": state["word"]}


def main():
    kitlib.serve({"setup": setup, "turn": turn, "oracle": oracle, "score": score}, CHECKS, DATASET)


if __name__ == "__main__":
    main()
