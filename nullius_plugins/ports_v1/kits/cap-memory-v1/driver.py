"""Driver of the cap.memory/v1 kit: one JSON request per line on stdin, one JSON reply per line on stdout.

One check, recall-fact. `setup` draws a fresh secret seed (kept in this
process, keyed by (unit, dir); never sent anywhere) and builds from it twelve
sessions of a small delivery office's chat with its assistant. Exactly one
session states the fact asked for ("the locker code for the north depot is
K7-Q2R"); the other eleven are plausible distractors on the same topics: the
same kind of code at two other depots, two other codes at the same depot, and
seven sessions of office chatter (rotas, deliveries, the lockers getting new
hinges, a side gate left open) that name the depots, lockers, gates and keys
but give no code. The question ("What is the locker code for the north
depot?") names the kind of code and the depot, never the code. Every code
session states its code the same way and is about as long as the others, so
what sets the right one apart is the kind and the depot together, not
wording. Ids, dates, names, phrasings, the order and every code come from the
seed; a second setup gives another fact.

The ops (docs/drivers.md; a capability benchmark's `setup` and `produce`):

    units    {"dataset"}  ->  {"units": ["recall-fact"]}
    setup    {"unit", "dir", "dataset", "verifier"}
             ->  {"sessions": [{"id", "date", "turns": [{"role", "text"}], "text"}, ...],
                  "question": STRING}
    produce  {"unit", "dir", "dataset", "question", "memory", "base_url", "key", "model"}
             ->  {"answer": MEMORY}    this kit reads no model: the memory is the answer
    score    {"unit", "dir", "dataset", "answer", "transcript"}
             ->  {"reward", "passed", "detail"}
    oracle   {"unit", "dir", "dataset"}  ->  {"answer": THE FACT'S VALUE}

Nullius adds every session to the capability (`add`), in the order given, then asks it
`recall` with the question; the recalled memory goes to `produce`, whose answer
goes to `score`. A session's `text` is its turns, one per line, as
"role: text"; the roles are "user" and "assistant".

`score` passes when the answer holds the fact's value (any case) and is
selective: at most 35% of the characters of all the sessions' `text`. A
capability that hands back everything it was given holds the value but fails,
and the detail says so. The oracle's answer is the value alone.

Standard library only; logs go to stderr.
"""

import datetime
import os
import random
import secrets
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import kitlib  # noqa: E402 - the kits' shared module, beside them

DATASET = "checks"
CHECKS = ["recall-fact"]
SHARE = 0.35  # the most of all the sessions' text a selective memory may return

PLACES = [
    "north depot", "south depot", "east depot", "west depot", "harbour depot",
    "river depot", "airport depot", "market depot", "canal depot", "hill depot",
]
KINDS = ["locker code", "gate code", "alarm code", "key safe code", "side door code"]
NAMES = ["Priya", "Tomasz", "Amara", "Jonas", "Keiko", "Mateo", "Fatima", "Liam", "Ines", "Olu", "Rosa", "Dev"]
LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"  # no I or O, so a code never reads as a digit
DIGITS = "0123456789"

SAME_KIND = 2   # the asked-for kind of code, at other depots
SAME_PLACE = 2  # other codes at the asked-for depot
CHATTER = 7     # no code at all
SESSIONS = 1 + SAME_KIND + SAME_PLACE + CHATTER

# A session that states one code: user, assistant and user turns. Each states it
# the same way, "the KIND for the PLACE is CODE", once, in sessions of about
# the same length, so that no session outweighs another by repeating or
# rephrasing the words a question uses: what tells the sessions apart is the
# kind of code and the depot together.
FACTS = [
    [
        "Can you keep a note of this? The {kind} for the {place} is {value}.",
        "Noted. I'll keep it safe and only share it with the team.",
        "Thanks, {name} asked me to write it down somewhere.",
    ],
    [
        "{name} changed it this morning: the {kind} for the {place} is {value} now.",
        "Thanks, I've updated my notes and will let the team know.",
        "Great, and please remind them to keep it private today.",
    ],
    [
        "Something to record: the {kind} for the {place} is {value}. Please don't share it outside the team.",
        "Understood. I've recorded it and will keep it to the team.",
        "Perfect, thank you, that helps a lot.",
    ],
    [
        "{name} starts on Monday and asked me how to get in.",
        "Do you have the details? You haven't told me yet.",
        "Yes: the {kind} for the {place} is {value}. Please remember it in case anyone asks.",
    ],
]

# Office chatter on the same topics: depots, lockers, doors, dates. No code;
# each names one depot once.
CHATS = [
    [
        "{name} is covering the early shift at the {place} on {day}, and {other} takes the late one.",
        "Got it. I'll put both of them on the rota.",
    ],
    [
        "The pallet of printer paper for the {place} arrives on {day}. Someone needs to sign for it.",
        "I'll remind {name} to be there to sign for the delivery.",
    ],
    [
        "The lockers at the {place} are getting new hinges next week, so everyone should empty theirs by {day}.",
        "I'll pass that on. Should the spare locker keys go back to the office?",
        "Yes, give them to {name}.",
    ],
    [
        "Forklift training for new starters at the {place} is on {day}. {name} is running it.",
        "Noted. I'll send the invitation to the new starters.",
    ],
    [
        "The side gate at the {place} was left open overnight again. Can you remind people to lock up?",
        "I'll send a reminder to everyone who works there.",
    ],
    [
        "The van from the {place} goes in for its service on {day}; use the spare van until then.",
        "Understood. I'll tell {name}, who has it booked that week.",
    ],
    [
        "Team lunch for the {place} crew is on {day} at the noodle bar by the station.",
        "Lovely. Shall I book a table for eight?",
        "Make it ten, {name} is bringing two of the drivers.",
    ],
    [
        "{name} lost the spare key to the office at the {place}. A locksmith is coming on {day}.",
        "I'll make sure someone is there to let the locksmith in.",
    ],
]

QUESTION = "What is the {kind} for the {place}?"

_SETUPS = kitlib.Setups()


def log(*parts):
    print("[cap-memory-v1]", *parts, file=sys.stderr, flush=True)


def make_code(rng, taken):
    while True:
        code = (rng.choice(LETTERS) + rng.choice(DIGITS) + "-"
                + rng.choice(LETTERS) + rng.choice(DIGITS) + rng.choice(LETTERS))
        if code not in taken:
            taken.add(code)
            return code


WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]


def spoken_date(day):
    """"Thursday 20 February", whatever the machine's locale."""
    return f"{WEEKDAYS[day.weekday()]} {day.day} {MONTHS[day.month - 1]}"


def session_of(template, fields):
    turns = []
    for i, line in enumerate(template):
        turns.append({"role": "user" if i % 2 == 0 else "assistant", "text": line.format(**fields)})
    return turns


def build(seed):
    """The unit from its seed: the sessions, the question, the fact's value and the other codes."""
    rng = random.Random(seed)
    taken = set()
    kind = rng.choice(KINDS)
    place = rng.choice(PLACES)
    value = make_code(rng, taken)
    other_places = rng.sample([p for p in PLACES if p != place], SAME_KIND)
    other_kinds = rng.sample([k for k in KINDS if k != kind], SAME_PLACE)

    plans = [("fact", kind, place, value)]
    plans += [("fact", kind, p, make_code(rng, taken)) for p in other_places]
    plans += [("fact", k, place, make_code(rng, taken)) for k in other_kinds]
    plans += [("chat", None, p, None) for p in rng.sample(PLACES, CHATTER)]  # the asked-for depot at most once
    rng.shuffle(plans)

    day = datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randrange(700))
    chats = rng.sample(CHATS, CHATTER)
    sessions, ids = [], set()
    target = None
    for plan_kind, k, p, code in plans:
        day += datetime.timedelta(days=rng.randint(1, 4))
        name, other = rng.sample(NAMES, 2)
        later = spoken_date(day + datetime.timedelta(days=rng.randint(2, 9)))
        fields = {"kind": k, "place": p, "value": code, "name": name, "other": other, "day": later}
        template = rng.choice(FACTS) if plan_kind == "fact" else chats.pop()
        turns = session_of(template, fields)
        while True:
            sid = "s-" + "".join(rng.choice("0123456789abcdef") for _ in range(8))
            if sid not in ids:
                ids.add(sid)
                break
        if code == value:
            target = sid
        sessions.append({
            "id": sid,
            "date": day.isoformat(),
            "turns": turns,
            "text": "\n".join(f"{t['role']}: {t['text']}" for t in turns),
        })
    assert len(sessions) == SESSIONS and target is not None
    question = QUESTION.format(kind=kind, place=place)
    others = sorted(taken - {value})
    return {"sessions": sessions, "question": question, "value": value, "target": target, "others": others}


def check_request(request):
    return kitlib.check_request(request, CHECKS, DATASET, folder="folder")


def state_of(request):
    key = check_request(request)
    return _SETUPS.get(key)


def setup(request):
    key = check_request(request)
    unit = build(secrets.token_hex(16))
    _SETUPS.put(key, unit)
    log(f"setup {key[0]}: a fresh seed drawn, {len(unit['sessions'])} sessions")
    return {"sessions": unit["sessions"], "question": unit["question"]}


def produce(request):
    check_request(request)
    memory = request.get("memory")
    if not isinstance(memory, str):
        raise ValueError("expected memory, the capability's recall, as a string")
    return {"answer": memory}


def score(request):
    unit = state_of(request)
    answer = request.get("answer")
    if not isinstance(answer, str):
        raise ValueError("expected answer, the recalled memory, as a string")
    value = unit["value"]
    total = sum(len(s["text"]) for s in unit["sessions"])
    found = value.upper() in answer.upper()
    share = len(answer) / total
    selective = share <= SHARE
    passed = found and selective
    detail = {
        "expected": value,
        "found": found,
        "selective": selective,
        "memory_chars": len(answer),
        "sessions_chars": total,
        "share": round(share, 4),
        "most": SHARE,
        "distractor_codes_in_memory": sum(1 for code in unit["others"] if code in answer.upper()),
        "rule": "the memory holds the fact's value (any case) and is at most 35% of all the sessions' text",
    }
    notes = []
    if not found:
        notes.append("the fact's value is not in the memory")
    if not selective:
        notes.append(
            f"the memory is {share:.0%} of all the sessions' text, over {SHARE:.0%}: "
            "a memory that returns everything (or most of it) is not selective, so it does not pass"
        )
    if notes:
        detail["note"] = "; ".join(notes)
    return {"reward": 1.0 if passed else 0.0, "passed": passed, "detail": detail}


def oracle(request):
    return {"answer": state_of(request)["value"]}


def main():
    kitlib.serve({"setup": setup, "produce": produce, "oracle": oracle, "score": score}, CHECKS, DATASET)


if __name__ == "__main__":
    main()
