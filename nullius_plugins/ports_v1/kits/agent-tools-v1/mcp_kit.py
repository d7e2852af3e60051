"""The tools kit's MCP server: twenty tools of a small shipping office, over stdio.

Run as a script (`{install}/.venv/bin/python {here}/mcp_kit.py`), it serves
the office with the mcp SDK's MCPServer and reads three variables the
driver's setup gives the session's MCP entry:

| variable | meaning |
|---|---|
| `NULLIUS_KIT_SEED` | The check's secret seed. Every answer is an HMAC of (seed, tool, arguments), so it differs per setup and cannot be guessed. Required. |
| `NULLIUS_MCP_LOG` | The call log, in the trial's verifier folder (outside the workspace). Every call is appended as one JSON line: `at`, `check`, `tool`, `arguments`, `ok`, `result` or `error`. Required. |
| `NULLIUS_KIT_CHECK` | The check this session serves; only written to the log. |

Imported (by driver.py), it needs nothing but the standard library: the
office itself (`Office`, `plan`) is plain Python, and the mcp SDK is imported
only when the server starts. The driver computes the same values from the
same seed, so the scorer recomputes every logged call rather than trusting
the log's text.

The office's rules, as the tools enforce them (a refusal is a ToolError, so
the model reads it as an `isError` result):

- parcel ids are `P-` and seven digits; staff ids `S-` and five digits;
  depot codes three letters, a hyphen and two digits (`KRV-42`). Case is
  forgiven everywhere but in `book_collection`;
- `book_collection` (the booking system) takes the depot code only in upper
  case and the date only as ISO 8601 (YYYY-MM-DD); a call that breaks either
  rule is refused, saying which. Nothing in its description tells the format
  beforehand: the retry check's prompt writes the code in lower case and the
  date as DD/MM/YYYY, so the first call is refused and the agent must read why;
- `rate_quote` takes a destination (a town name, case and spacing forgiven)
  and a whole weight in kilograms, 1 to 70.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import os
import re
import sys

SERVER_NAME = "office"
ENV_SEED = "NULLIUS_KIT_SEED"
ENV_LOG = "NULLIUS_MCP_LOG"
ENV_CHECK = "NULLIUS_KIT_CHECK"

CHECKS = ["one-tool", "arguments", "decoys", "chain", "retry"]

LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"  # no I or O: they read as digits
ONSETS = "b d f g k l m n p r s t v z".split()
VOWELS = "a e i o u".split()
CODAS = "k l m n r s t".split()
FIRST_NAMES = ("Ada Bram Cleo Dario Edda Farid Greta Hugo Ines Jonas Kaja Lior Mira Nils Oona Pavel "
               "Quinn Rhea Soren Tilda Umar Vera Wim Yara Zeno").split()
LAST_NAMES = ("Albers Brandt Castell Dunmore Eskola Fairley Gallo Hartwig Ilves Jansen Kowal Lindqvist "
              "Moreau Novak Okafor Petrov Quist Rasmus Sato Tanaka Ueda Varga Weller Yilmaz Zorn").split()
STATUSES = ["in transit", "at the sorting hall", "out for delivery", "awaiting collection", "held for inspection"]
WEATHER = ["clear", "light rain", "overcast", "fog", "drizzle", "strong wind", "sleet", "sunny spells"]
STREETS = ["Harbour", "Mill", "Station", "Quarry", "Canal", "Orchard", "Foundry", "Beacon"]

PARCEL_RE = re.compile(r"^P-\d{7}$")
STAFF_RE = re.compile(r"^S-\d{5}$")
DEPOT_RE = re.compile(r"^[A-Z]{3}-\d{2}$")
ISO_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
PLACE_RE = re.compile(r"^[^\W\d_]+(?:[ '\-][^\W\d_]+)*$")
HS_RE = re.compile(r"^\d{6}$")
CURRENCY_RE = re.compile(r"^[A-Z]{3}$")

# The four parcel documents: the decoys check asks for one; the other three look the same.
DOCUMENTS = ["customs_declaration", "insurance_certificate", "delivery_receipt", "return_authorisation"]


class Refused(Exception):
    """A call the office refuses; its text is what the model reads."""


# ---------------------------------------------------------------- values from the seed

def digest(seed: str, *parts) -> bytes:
    message = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hmac.new(seed.encode(), message.encode(), hashlib.sha256).digest()


def number(seed: str, *parts) -> int:
    return int.from_bytes(digest(seed, *parts)[:8], "big")


def made_up_word(n: int) -> str:
    """Three consonant-vowel syllables and a closing consonant: 2.4 million words."""
    out = []
    for _ in range(3):
        n, onset = divmod(n, len(ONSETS))
        n, vowel = divmod(n, len(VOWELS))
        out.append(ONSETS[onset] + VOWELS[vowel])
    n, coda = divmod(n, len(CODAS))
    return "".join(out) + CODAS[coda]


def reference(n: int) -> str:
    """Two letters, a hyphen and six digits (KD-482913): every document number of the office looks like this."""
    n, a = divmod(n, len(LETTERS))
    n, b = divmod(n, len(LETTERS))
    return f"{LETTERS[a]}{LETTERS[b]}-{n % 1_000_000:06d}"


def depot_code(n: int) -> str:
    letters = []
    for _ in range(3):
        n, i = divmod(n, 26)
        letters.append(chr(ord("A") + i))
    return "".join(letters) + f"-{n % 100:02d}"


def staff_id(n: int) -> str:
    return f"S-{n % 100_000:05d}"


def parcel_id(n: int) -> str:
    return f"P-{n % 10_000_000:07d}"


def person(n: int) -> str:
    n, first = divmod(n, len(FIRST_NAMES))
    return f"{FIRST_NAMES[first]} {LAST_NAMES[n % len(LAST_NAMES)]}"


def call_sign(n: int) -> str:
    n, digits = divmod(n, 100)
    return f"{made_up_word(n).capitalize()}-{digits:02d}"


# ---------------------------------------------------------------- arguments

def _text(value, what: str) -> str:
    if not isinstance(value, str):
        raise Refused(f"{what} must be a string")
    return value.strip()


def norm_parcel(value) -> str:
    text = _text(value, "parcel_id").upper()
    if not PARCEL_RE.match(text):
        raise Refused(f"no parcel {value!r}: parcel ids are P- and seven digits, like P-0000001")
    return text


def norm_staff(value) -> str:
    text = _text(value, "staff_id").upper()
    if not STAFF_RE.match(text):
        raise Refused(f"no staff member {value!r}: staff ids are S- and five digits, like S-00001")
    return text


def norm_depot(value) -> str:
    """A depot code, case forgiven."""
    text = _text(value, "depot_code").upper()
    if not DEPOT_RE.match(text):
        raise Refused(f"no depot {value!r}: depot codes are three letters, a hyphen and two digits")
    return text


def norm_place(value) -> str:
    """A town's name as the office files it: spacing and case forgiven."""
    text = " ".join(_text(value, "destination").split())
    if not text or len(text) > 60 or not PLACE_RE.match(text):
        raise Refused(f"no destination {value!r}: give the town's name in letters")
    return text.casefold()


def norm_weight(value) -> int:
    """A whole number of kilograms, read as the SDK's argument check reads an integer (17, 17.0, "17")."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refused("weight_kg must be a whole number of kilograms")
    if not 1 <= value <= 70:
        raise Refused(f"the office takes parcels of 1 to 70 kg, not {value}")
    return value


# ---------------------------------------------------------------- the office

class Office:
    """The twenty tools, as plain methods of a seed: `call(tool, arguments)` gives the text or raises Refused."""

    # name -> (description, [(parameter, type, description)])
    TOOLS = {
        "dispatch_passphrase": ("The passphrase couriers must quote at the depot gate today.", []),
        "duty_manager": ("The name of the manager on duty at the office today.", []),
        "office_hours": ("The counter's opening hours.", []),
        "rate_quote": (
            "Quote the standard rate for sending one parcel to a destination: gives the quote's reference and its price.",
            [("destination", str, "the town the parcel goes to"), ("weight_kg", int, "the parcel's weight in whole kilograms")],
        ),
        "transit_days": ("How many working days parcels take to reach a destination.",
                         [("destination", str, "the town the parcel goes to")]),
        "customs_declaration": ("The number of the customs declaration filed for a parcel sent abroad.",
                                [("parcel_id", str, "the parcel's id")]),
        "insurance_certificate": ("The number of the insurance certificate covering a parcel.",
                                  [("parcel_id", str, "the parcel's id")]),
        "delivery_receipt": ("The number of the receipt signed when a parcel was delivered.",
                             [("parcel_id", str, "the parcel's id")]),
        "return_authorisation": ("The number of the return authorisation issued for a parcel being sent back.",
                                 [("parcel_id", str, "the parcel's id")]),
        "parcel_status": ("A parcel's current status and when it was last scanned.", [("parcel_id", str, "the parcel's id")]),
        "locate_parcel": ("The code of the depot where a parcel is held.", [("parcel_id", str, "the parcel's id")]),
        "shift_lead": ("The staff id of the member of staff leading the current shift at a depot.",
                       [("depot_code", str, "the depot's code")]),
        "radio_call_sign": ("The radio call sign of a member of staff.", [("staff_id", str, "the staff member's id")]),
        "book_collection": ("Book a courier collection at a depot on a given day; gives the booking reference.",
                            [("depot_code", str, "the depot's code"), ("date", str, "the day of the collection")]),
        "depot_weather": ("The weather at a depot now.", [("depot_code", str, "the depot's code")]),
        "depot_address": ("A depot's street address.", [("depot_code", str, "the depot's code")]),
        "staff_on_shift": ("The names of the staff on the current shift at a depot.", [("depot_code", str, "the depot's code")]),
        "staff_extension": ("The phone extension of a member of staff.", [("staff_id", str, "the staff member's id")]),
        "customs_tariff": ("The import duty rate for goods of a six-digit HS code.", [("hs_code", str, "the goods' HS code")]),
        "exchange_rate": ("How much of a currency one office credit buys today.",
                          [("currency", str, "the ISO 4217 code of the currency, such as EUR")]),
    }

    def __init__(self, seed: str) -> None:
        if not seed:
            raise ValueError("the office needs a seed")
        self.seed = seed

    def n(self, tool: str, key) -> int:
        return number(self.seed, tool, key)

    # The value each tool gives (the token a check's answer is), from normalised arguments.
    def value(self, tool: str, arguments: dict) -> str:
        """The token a successful call of `tool` with these (raw) arguments gives; Refused when the office refuses it."""
        return self._answer(tool, arguments)[1]

    def call(self, tool: str, arguments: dict) -> str:
        """The text a call gives the model; Refused when the office refuses it."""
        return self._answer(tool, arguments)[0]

    def _answer(self, tool: str, arguments: dict) -> tuple[str, str]:
        if tool not in self.TOOLS:
            raise Refused(f"unknown tool {tool!r}")
        wanted = [p for p, _, _ in self.TOOLS[tool][1]]
        missing = [p for p in wanted if p not in arguments]
        if missing:
            raise Refused(f"missing argument(s): {', '.join(missing)}")
        return getattr(self, "_" + tool)(**{p: arguments[p] for p in wanted})

    def _dispatch_passphrase(self):
        word = made_up_word(self.n("dispatch_passphrase", ""))
        return f"Today's dispatch passphrase: {word}", word

    def _duty_manager(self):
        name = person(self.n("duty_manager", ""))
        return f"Manager on duty today: {name}", name

    def _office_hours(self):
        text = "The counter is open Monday to Friday 08:00-18:00 and Saturday 09:00-13:00; closed on Sundays."
        return text, text

    def _rate_quote(self, destination, weight_kg):
        place, weight = norm_place(destination), norm_weight(weight_kg)
        key = {"destination": place, "weight_kg": weight}
        ref = reference(self.n("rate_quote", key))
        price = 400 + self.n("rate_quote/price", key) % 9600
        return f"Rate quote {ref}: {weight} kg to {place.title()}, {price // 100}.{price % 100:02d} credits.", ref

    def _transit_days(self, destination):
        place = norm_place(destination)
        days = 1 + self.n("transit_days", place) % 9
        return f"Parcels to {place.title()} take {days} working day{'s' if days > 1 else ''}.", str(days)

    def _document(self, tool, parcel, label):
        pid = norm_parcel(parcel)
        ref = reference(self.n(tool, pid))
        return f"{label} for parcel {pid}: {ref}", ref

    def _customs_declaration(self, parcel_id):
        return self._document("customs_declaration", parcel_id, "Customs declaration number")

    def _insurance_certificate(self, parcel_id):
        return self._document("insurance_certificate", parcel_id, "Insurance certificate number")

    def _delivery_receipt(self, parcel_id):
        return self._document("delivery_receipt", parcel_id, "Delivery receipt number")

    def _return_authorisation(self, parcel_id):
        return self._document("return_authorisation", parcel_id, "Return authorisation number")

    def _parcel_status(self, parcel_id):
        pid = norm_parcel(parcel_id)
        n = self.n("parcel_status", pid)
        status = STATUSES[n % len(STATUSES)]
        day = _dt.date(2026, 1, 1) + _dt.timedelta(days=(n >> 8) % 365)
        return f"Parcel {pid}: {status}, last scanned on {day.isoformat()}.", status

    def _locate_parcel(self, parcel_id):
        pid = norm_parcel(parcel_id)
        depot = depot_code(self.n("locate_parcel", pid))
        return f"Parcel {pid} is held at depot {depot}.", depot

    def _shift_lead(self, depot_code):
        depot = norm_depot(depot_code)
        lead = staff_id(self.n("shift_lead", depot))
        return f"The shift at depot {depot} is led by staff member {lead}.", lead

    def _radio_call_sign(self, staff_id):
        sid = norm_staff(staff_id)
        sign = call_sign(self.n("radio_call_sign", sid))
        return f"Radio call sign of staff member {sid}: {sign}", sign

    def _book_collection(self, depot_code, date):
        code = _text(depot_code, "depot_code")
        day_text = _text(date, "date")
        problems = []
        if not DEPOT_RE.match(code.upper()):
            problems.append(f"there is no depot {code!r}: depot codes are three letters, a hyphen and two digits")
        elif code != code.upper():
            problems.append(f"the booking system takes depot codes in upper case letters only, and {code!r} is not")
        day = None
        if ISO_DATE_RE.match(day_text):
            try:
                day = _dt.date.fromisoformat(day_text)
            except ValueError:
                problems.append(f"{day_text!r} is not a day of the calendar")
        else:
            problems.append(f"the date must be written in ISO 8601 form, YYYY-MM-DD, and {day_text!r} is not")
        if problems:
            raise Refused("booking refused: " + "; ".join(problems) + ".")
        key = {"depot_code": code, "date": day.isoformat()}
        ref = reference(self.n("book_collection", key))
        return f"Collection booked at depot {code} on {day.isoformat()}: booking reference {ref}.", ref

    def _depot_weather(self, depot_code):
        depot = norm_depot(depot_code)
        n = self.n("depot_weather", depot)
        sky = WEATHER[n % len(WEATHER)]
        return f"Weather at depot {depot}: {sky}, {(n >> 8) % 30 - 5} °C, wind {(n >> 16) % 60} km/h.", sky

    def _depot_address(self, depot_code):
        depot = norm_depot(depot_code)
        n = self.n("depot_address", depot)
        town = made_up_word(n >> 16).capitalize()
        street = STREETS[n % len(STREETS)]
        return f"Depot {depot}: {(n >> 8) % 200 + 1} {street} Road, {town}.", town

    def _staff_on_shift(self, depot_code):
        depot = norm_depot(depot_code)
        names = [person(self.n("staff_on_shift", [depot, i])) for i in range(3)]
        return f"On shift at depot {depot}: {', '.join(names)}.", ", ".join(names)

    def _staff_extension(self, staff_id):
        sid = norm_staff(staff_id)
        ext = f"{self.n('staff_extension', sid) % 9000 + 1000}"
        return f"Phone extension of staff member {sid}: {ext}", ext

    def _customs_tariff(self, hs_code):
        code = _text(hs_code, "hs_code").replace(".", "").replace(" ", "")
        if not HS_RE.match(code):
            raise Refused(f"no HS code {hs_code!r}: HS codes have six digits")
        rate = self.n("customs_tariff", code) % 250
        return f"Import duty on HS {code}: {rate // 10}.{rate % 10}%", f"{rate // 10}.{rate % 10}%"

    def _exchange_rate(self, currency):
        cur = _text(currency, "currency").upper()
        if not CURRENCY_RE.match(cur):
            raise Refused(f"no currency {currency!r}: give its three-letter ISO 4217 code")
        rate = self.n("exchange_rate", cur) % 500000 + 1000
        return f"1 office credit buys {rate / 10000:.4f} {cur} today.", f"{rate / 10000:.4f}"


# ---------------------------------------------------------------- the checks

def _day_after(seed: str, label: str) -> _dt.date:
    """A day within some 400 days from June 2026 whose day of the month is above 12, so DD/MM cannot be read as MM/DD."""
    n = number(seed, "plan", label)
    day = _dt.date(2026, 6, 1) + _dt.timedelta(days=n % 400)
    while day.day <= 12:
        day += _dt.timedelta(days=13 - day.day)
    return day


def plan(check: str, seed: str) -> dict:
    """What a check asks and expects, from its seed: prompt, answer, and what the log must show.

    Keys: `prompt`; `answer` (the token the final message must carry); `tool`
    (the tool whose value is the answer); `arguments` (its normalised
    arguments); for chain, `hops` ([(tool, normalised arguments, value)] in
    order); for decoys, `decoys` ({tool: value} of the look-alike documents).
    """
    office = Office(seed)
    closing = " Use the tools you have been given. Reply with {what} alone as your final message, nothing else."
    if check == "one-tool":
        answer = office.value("dispatch_passphrase", {})
        prompt = ("Couriers must quote today's dispatch passphrase at the depot gate. Find out what it is."
                  + closing.format(what="the passphrase"))
        return {"prompt": prompt, "answer": answer, "tool": "dispatch_passphrase", "arguments": {}}
    if check == "arguments":
        town = made_up_word(number(seed, "plan", "town")).capitalize()
        weight = 2 + number(seed, "plan", "weight") % 39
        args = {"destination": town.casefold(), "weight_kg": weight}
        answer = office.value("rate_quote", args)
        prompt = (f"A customer wants to send one parcel weighing {weight} kg to {town}. Get the office's standard "
                  f"rate quote for it and find the quote's reference." + closing.format(what="the quote's reference"))
        return {"prompt": prompt, "answer": answer, "tool": "rate_quote", "arguments": args}
    if check == "decoys":
        pid = parcel_id(number(seed, "plan", "parcel"))
        target = DOCUMENTS[number(seed, "plan", "document") % len(DOCUMENTS)]
        asks = {
            "customs_declaration": (f"Parcel {pid} was sent abroad and had to clear customs. Find the number of the "
                                    "customs declaration filed for it.", "that declaration number"),
            "insurance_certificate": (f"Parcel {pid} was insured when it was sent. Find the number of the insurance "
                                      "certificate that covers it.", "that certificate number"),
            "delivery_receipt": (f"Parcel {pid} has been delivered and signed for. Find the number of the receipt "
                                 "signed on its delivery.", "that receipt number"),
            "return_authorisation": (f"The customer wants to send parcel {pid} back. Find the number of the return "
                                     "authorisation issued for it.", "that authorisation number"),
        }
        ask, what = asks[target]
        args = {"parcel_id": pid}
        return {
            "prompt": ask + closing.format(what=what),
            "answer": office.value(target, args),
            "tool": target,
            "arguments": args,
            "decoys": {doc: office.value(doc, args) for doc in DOCUMENTS if doc != target},
        }
    if check == "chain":
        pid = parcel_id(number(seed, "plan", "chain-parcel"))
        depot = office.value("locate_parcel", {"parcel_id": pid})
        lead = office.value("shift_lead", {"depot_code": depot})
        sign = office.value("radio_call_sign", {"staff_id": lead})
        prompt = (f"Parcel {pid} is held at one of the office's depots. Find out which depot, then the member of staff "
                  "who leads the current shift there, then that person's radio call sign."
                  + closing.format(what="the radio call sign"))
        hops = [("locate_parcel", {"parcel_id": pid}, depot), ("shift_lead", {"depot_code": depot}, lead),
                ("radio_call_sign", {"staff_id": lead}, sign)]
        return {"prompt": prompt, "answer": sign, "tool": "radio_call_sign", "arguments": {"staff_id": lead}, "hops": hops}
    if check == "retry":
        depot = depot_code(number(seed, "plan", "retry-depot"))
        day = _day_after(seed, "retry-day")
        args = {"depot_code": depot, "date": day.isoformat()}
        prompt = (f"Book a courier collection at depot {depot.lower()} for {day.strftime('%d/%m/%Y')}."
                  + closing.format(what="the booking reference"))
        return {"prompt": prompt, "answer": office.value("book_collection", args), "tool": "book_collection", "arguments": args}
    raise ValueError(f"unknown check {check!r}: expected one of {', '.join(CHECKS)}")


def normalised_arguments(tool: str, arguments: dict):
    """A call's arguments as the office reads them (None when it would refuse them): the scorer's comparison."""
    if not isinstance(arguments, dict):
        return None
    try:
        if tool == "rate_quote":
            return {"destination": norm_place(arguments.get("destination")), "weight_kg": norm_weight(arguments.get("weight_kg"))}
        if tool in DOCUMENTS or tool in ("locate_parcel", "parcel_status"):
            return {"parcel_id": norm_parcel(arguments.get("parcel_id"))}
        if tool in ("shift_lead", "depot_weather", "depot_address", "staff_on_shift"):
            return {"depot_code": norm_depot(arguments.get("depot_code"))}
        if tool in ("radio_call_sign", "staff_extension"):
            return {"staff_id": norm_staff(arguments.get("staff_id"))}
        if tool == "book_collection":
            Office("x")._book_collection(arguments.get("depot_code"), arguments.get("date"))
            return {"depot_code": arguments["depot_code"].strip(), "date": arguments["date"].strip()}
        if tool in Office.TOOLS:
            return {k: v for k, v in arguments.items()}
    except (Refused, KeyError, AttributeError):
        return None
    return None


# ---------------------------------------------------------------- the server

def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _append(path: str, record: dict) -> None:
    """One JSON line, written with one O_APPEND write, so two servers of a unit never interleave a line."""
    line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode()
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def build_server(seed: str, log_path: str, check: str = ""):
    """The MCPServer of the office: the twenty tools, each call logged."""
    import inspect
    from typing import Annotated

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import Field

    office = Office(seed)

    class LoggedOffice(MCPServer):
        async def call_tool(self, name, arguments, context=None):
            record = {"at": _now(), "check": check, "tool": name, "arguments": arguments}
            try:
                result = await super().call_tool(name, arguments, context)
            except Exception as exc:
                _append(log_path, {**record, "ok": False, "error": str(exc)})
                raise
            texts = [getattr(c, "text", "") for c in getattr(result, "content", None) or []]
            failed = bool(getattr(result, "is_error", False))
            _append(log_path, {**record, "ok": not failed, ("error" if failed else "result"): "\n".join(texts)})
            return result

    server = LoggedOffice(
        SERVER_NAME,
        instructions="The tools of a small shipping office: parcels and their documents, depots, staff, rates and customs.",
        version="2",
        log_level="WARNING",
    )

    def make(tool: str, params):
        def run(**arguments) -> str:
            try:
                return office.call(tool, arguments)
            except Refused as exc:
                raise ToolError(str(exc)) from None

        run.__name__ = tool
        run.__signature__ = inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[t, Field(description=d)])
             for p, t, d in params],
            return_annotation=str,
        )
        return run

    for tool, (description, params) in Office.TOOLS.items():
        server.add_tool(make(tool, params), name=tool, description=description, structured_output=False)
    return server


def main() -> int:
    seed = os.environ.get(ENV_SEED, "")
    log_path = os.environ.get(ENV_LOG, "")
    if not seed or not log_path or not os.path.isabs(log_path):
        print(f"mcp_kit: {ENV_SEED} and {ENV_LOG} (an absolute path) must be set; the kit's driver sets them",
              file=sys.stderr, flush=True)
        return 2
    build_server(seed, log_path, os.environ.get(ENV_CHECK, "")).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
