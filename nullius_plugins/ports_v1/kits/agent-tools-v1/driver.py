"""Driver of the agent.tools/v1 kit (version 2): one JSON request per line on stdin, one JSON reply per line on stdout.

Five checks, in order: one-tool and arguments (basic), decoys, chain and
retry (skills). The session gets one stdio MCP server, mcp_kit.py beside this
file: twenty tools of a small shipping office (see its docstring for the
tools and their rules).

- `setup` draws a fresh secret seed (secrets.token_hex), keeps it in this
  process keyed by (unit, dir) until `score`, and replies with the prompt and
  one MCP entry: `{"name": "office", "server": "office", "env":
  {"NULLIUS_KIT_SEED": seed, "NULLIUS_MCP_LOG": <verifier>/mcp-calls.jsonl,
  "NULLIUS_KIT_CHECK": unit}}`. `server` names standard.json's
  `mcp_servers.office`. The prompt never carries the seed nor a tool's name;
  it says what to find and asks for the answer alone as the final message.
  A stale log at that path is removed. `verifier` (the trial's verifier
  folder) is required and must lie outside the workspace.
- `score` passes only when the final message carries the answer (as a
  whole token, case aside, after trimming quotes and a trailing period) and
  carries no look-alike value (a decoy document's number, or another value
  of the same shape the calls returned), AND the call log shows the calls
  that produce it. The scorer recomputes every logged call from the seed and
  ignores a line whose result the office would not have given.
    one-tool   a call of the passphrase tool (no arguments);
    arguments  a call of the rate tool with the prompt's town and weight;
    decoys     a call of the one document tool the prompt describes, for the
               prompt's parcel (calling the look-alikes is allowed, answering
               from one is not);
    chain      the three hops in order, each with the previous hop's output:
               parcel -> depot -> shift lead -> radio call sign;
    retry      a booking call the office refused, then a later accepted one
               with the depot code in upper case and the date in ISO form.
               A first booking call that is already right shows no retry,
               and the check fails saying so.
  `detail` says what was expected, what the message carried and what the
  log shows (each call: tool, arguments, value or error).
- `oracle` replies with the reference answer and marks this setup's state
  `oracle: true`. Only with that mark, and only when there is no call log
  (no agent ran, so no call was made), does `score` judge the message alone;
  an agent's unit never receives `oracle`, so its mark is never set.

Needs only the standard library and mcp_kit.py (whose office part imports no
mcp); it runs in the kit's installed environment all the same, the one
`{install}` names for the MCP server. Logs go to stderr.
"""

import json
import os
import re
import secrets
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mcp_kit  # noqa: E402  (beside this file)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import kitlib  # noqa: E402 - the kits' shared module, beside them

DATASET = "checks"
CHECKS = list(mcp_kit.CHECKS)
SERVER = "office"
LOG_NAME = "mcp-calls.jsonl"
READ_BYTES = 8 * 1024 * 1024  # the most of a call log the scorer reads
SHOWN_CALLS = 40  # calls listed in detail

# Pairs stripped from around an answer: quotes and backticks.
PAIRS = kitlib.QUOTES + [("**", "**")]  # and markdown bold

NEEDS = {
    "one-tool": "a call of the tool that gives today's dispatch passphrase, and the passphrase in the final message",
    "arguments": "a call of the rate-quote tool with destination {destination!r} and weight_kg {weight_kg}, "
                 "and the quote's reference it gave in the final message",
    "decoys": "a call of {tool} for parcel {parcel_id}, and the number it gave in the final message, "
              "with no look-alike document's number",
    "chain": "locate_parcel({parcel_id}) -> {depot}, then shift_lead({depot}) -> {lead}, then radio_call_sign({lead}), "
             "in that order, and its call sign in the final message",
    "retry": "a refused call of book_collection, then an accepted one with depot_code {depot_code!r} and date {date!r}, "
             "and its booking reference in the final message",
}

_SETUPS = kitlib.Setups()


def log(*parts):
    print("[agent-tools-v1]", *parts, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- requests

def check_request(request):
    return kitlib.check_request(request, CHECKS, DATASET)


def verifier_of(request, directory):
    """The trial's verifier folder: absolute, and outside the workspace."""
    verifier = request.get("verifier")
    if not isinstance(verifier, str) or not os.path.isabs(verifier):
        raise ValueError("expected verifier, the trial's verifier folder, as an absolute path: the MCP call log goes there")
    real, root = os.path.realpath(verifier), os.path.realpath(directory)
    if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
        raise ValueError(f"the verifier folder {verifier} lies inside the workspace {directory}: the call log must stay out of it")
    return os.path.normpath(verifier)


def state_of(request):
    key = check_request(request)
    return key, _SETUPS.get(key)


# ---------------------------------------------------------------- ops

def setup(request):
    key = check_request(request)
    unit, directory = key
    verifier = verifier_of(request, directory)
    os.makedirs(verifier, exist_ok=True)
    log_path = os.path.join(verifier, LOG_NAME)
    if os.path.lexists(log_path):
        os.unlink(log_path)  # an earlier setup's calls answer another seed
    seed = secrets.token_hex(16)
    plan = mcp_kit.plan(unit, seed)
    _SETUPS.put(key, {"seed": seed, "plan": plan, "log": log_path, "oracle": False})
    log(f"setup {unit}: a fresh seed drawn; calls logged to {log_path}")
    env = {mcp_kit.ENV_SEED: seed, mcp_kit.ENV_LOG: log_path, mcp_kit.ENV_CHECK: unit}
    return {"prompt": plan["prompt"], "mcp": [{"name": SERVER, "server": SERVER, "env": env}]}


def oracle(request):
    _, state = state_of(request)
    state["oracle"] = True
    return {"answer": state["plan"]["answer"]}


# ---------------------------------------------------------------- the log

def read_log(path):
    """(records, notes): each line a JSON object; what could not be read is noted, never trusted."""
    notes = []
    if not os.path.lexists(path):
        return None, notes
    if os.path.islink(path) or not os.path.isfile(path):
        return [], [f"{path} is not a regular file: not read"]
    with open(path, "rb") as handle:
        data = handle.read(READ_BYTES + 1)
    if len(data) > READ_BYTES:
        notes.append(f"the log is over {READ_BYTES} bytes: only its start is read")
        data = data[:READ_BYTES]
    records, bad = [], 0
    for line in data.decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if not isinstance(record, dict) or not isinstance(record.get("tool"), str):
            bad += 1
            continue
        records.append(record)
    if bad:
        notes.append(f"{bad} line(s) of the log are not call records: ignored")
    return records, notes


def examine(office, records):
    """Each record checked against the office: a successful call must give what the office gives for its arguments.

    Returns a list of calls: {i, tool, arguments, ok, value, args (normalised), verified}.
    """
    calls = []
    for i, record in enumerate(records):
        tool, arguments = record["tool"], record.get("arguments")
        arguments = arguments if isinstance(arguments, dict) else {}
        call = {"i": i, "tool": tool, "arguments": arguments, "ok": record.get("ok") is True}
        try:
            text = office.call(tool, arguments)
            value = office.value(tool, arguments)
            refused = None
        except mcp_kit.Refused as exc:
            text = value = None
            refused = str(exc)
        except Exception as exc:  # a record no tool could have made
            text = value = None
            refused = f"{type(exc).__name__}: {exc}"
        if call["ok"]:
            call["verified"] = text is not None and record.get("result") == text
            call["value"] = value
        else:
            # a refusal counts when the office refuses these arguments (or the SDK rejected them before the office saw them)
            call["verified"] = refused is not None or "validation error" in str(record.get("error", ""))
            call["error"] = str(record.get("error", ""))[:300]
        call["args"] = mcp_kit.normalised_arguments(tool, arguments)
        calls.append(call)
    return calls


def shown(calls):
    out = []
    for call in calls[:SHOWN_CALLS]:
        row = {"tool": call["tool"], "arguments": call["arguments"], "ok": call["ok"]}
        if call["ok"]:
            row["value"] = call.get("value")
        else:
            row["error"] = call.get("error")
        if not call["verified"]:
            row["not_trusted"] = "the office would not have given this result" if call["ok"] else "the office would not refuse these arguments"
        out.append(row)
    return out


# ---------------------------------------------------------------- the message


def carries(message, token):
    """The token as a whole word of the message, case aside."""
    if not token:
        return False
    return re.search(r"(?<![A-Za-z0-9])" + re.escape(token) + r"(?![A-Za-z0-9])", message, re.IGNORECASE) is not None


def shape(token):
    return re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"[0-9]", "9", token)))


# ---------------------------------------------------------------- score

def first(calls, tool, args, after=-1):
    """The first verified successful call of tool with these normalised arguments, after index `after`."""
    for call in calls:
        if call["i"] > after and call["ok"] and call["verified"] and call["tool"] == tool and call["args"] == args:
            return call
    return None


def judge_calls(unit, plan, calls):
    """(producing call indexes, why not) for what the check needs the log to show."""
    if unit in ("one-tool", "arguments", "decoys"):
        call = first(calls, plan["tool"], plan["arguments"])
        if call is None:
            same = [c for c in calls if c["tool"] == plan["tool"]]
            if not same:
                return None, f"the log shows no call of the tool the answer comes from ({plan['tool']})"
            return None, f"the log shows {len(same)} call(s) of {plan['tool']}, none accepted with the right arguments"
        return [call["i"]], None
    if unit == "chain":
        at, used = -1, []
        for n, (tool, args, _value) in enumerate(plan["hops"], start=1):
            call = first(calls, tool, args, after=at)
            if call is None:
                earlier = first(calls, tool, args)
                if earlier is not None:
                    return None, f"hop {n} ({tool} with {args}) was called before the hop that gives its input"
                return None, f"the log shows no hop {n}: {tool} with {args}"
            at = call["i"]
            used.append(at)
        return used, None
    if unit == "retry":
        accepted = first(calls, plan["tool"], plan["arguments"])
        if accepted is None:
            return None, "the log shows no accepted booking with the depot code in upper case and the date in ISO form"
        refused = [c for c in calls if c["tool"] == plan["tool"] and not c["ok"] and c["verified"] and c["i"] < accepted["i"]]
        if not refused:
            return None, "the first booking call was already accepted: no refused call to recover from, so the retry was not shown"
        return [refused[0]["i"], accepted["i"]], None
    raise ValueError(f"unknown check {unit!r}")


def rivals_of(plan, calls, used):
    """Look-alike values the message must not carry: the decoy documents', and same-shaped values other calls gave."""
    answer = plan["answer"]
    rivals = {}
    for tool, value in (plan.get("decoys") or {}).items():
        rivals[value] = f"{tool} (a look-alike document)"
    for call in calls:
        value = call.get("value")
        if call["ok"] and call["verified"] and call["i"] not in used and isinstance(value, str) \
                and value.lower() != answer.lower() and shape(value) == shape(answer):
            rivals.setdefault(value, f"{call['tool']}({', '.join(f'{k}={v!r}' for k, v in call['arguments'].items())})")
    return rivals


def score(request):
    (unit, _directory), state = state_of(request)
    answer = request.get("answer")
    if not isinstance(answer, str):
        raise ValueError("expected answer, the agent's last message, as a string")
    plan = state["plan"]
    expected = plan["answer"]
    found = kitlib.normalise(answer, PAIRS)
    detail = {
        "check": unit,
        "expected": expected,
        "needs": NEEDS[unit].format(**needs_fields(unit, plan)),
        "found": found[:300],
        "log": state["log"],
    }
    records, notes = read_log(state["log"])
    if notes:
        detail["log_notes"] = notes
    carried = carries(found, expected)
    if records is None:
        detail["calls"] = []
        if state["oracle"]:
            detail["oracle"] = "no agent ran, so there is no call log: the reference answer is judged alone"
            return verdict(carried, detail, None if carried else "the oracle's answer is not the expected one")
        return verdict(False, detail, "there is no call log: no tool was called")
    office = mcp_kit.Office(state["seed"])
    calls = examine(office, records)
    detail["calls"] = shown(calls)
    if len(calls) > SHOWN_CALLS:
        detail["calls_not_shown"] = len(calls) - SHOWN_CALLS
    used, why = judge_calls(unit, plan, calls)
    if why:
        return verdict(False, detail, why)
    if not carried:
        return verdict(False, detail, f"the final message does not carry the answer {expected}")
    rivals = rivals_of(plan, calls, set(used))
    also = sorted(f"{value} from {source}" for value, source in rivals.items() if carries(found, value))
    if also:
        return verdict(False, detail, "the final message also carries a look-alike value: " + "; ".join(also))
    detail["producing_calls"] = [shown([c])[0] for c in calls if c["i"] in used]
    return verdict(True, detail, None)


def needs_fields(unit, plan):
    if unit == "chain":
        (_, first_args, depot), (_, _, lead), _ = plan["hops"]
        return {"parcel_id": first_args["parcel_id"], "depot": depot, "lead": lead}
    fields = dict(plan["arguments"])
    fields["tool"] = plan["tool"]
    return fields


def verdict(passed, detail, why):
    if why:
        detail["why"] = why
    return {"reward": 1.0 if passed else 0.0, "passed": passed, "detail": detail}


def main():
    kitlib.serve({"setup": setup, "oracle": oracle, "score": score}, CHECKS, DATASET)


if __name__ == "__main__":
    main()
