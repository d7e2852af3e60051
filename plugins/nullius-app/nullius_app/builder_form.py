"""The builder's form as a run recipe, and the plan it compiles to: its jobs, the exact commands, what applies and what is wrong.

The form is what the page sends (its fields as strings, lists for the
datasets and participants). It becomes a recipe read as strictly as
`nullius run --from-run` reads one (`RunRecipe`, through the definitions'
converter), and `compile_run` names its jobs as the standard does. A
benchmark's option is offered only where it applies to every job of the
recipe (its `datasets`, the jobs' setups, its `when`:
nullius_core/definitions/setups.py); an agent's option only where every
agent chosen declares it. What the CLI alone can tell (a key, an install, a
fit) it says when the job runs.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import attrs

from nullius_core.definitions import DefinitionError, Option, structure
from nullius_core.definitions.setups import YOURS, applying, original_method, why_not
from nullius_core.recipes import FIELDS, OTHERS, RunRecipe, compile_run

from nullius_app.builder_catalogue import BenchView

Said = tuple[str | None, str]  # a problem: the form's field it is about (None: the whole), and what is wrong
# a recipe's key, as the converter names it ($.key...), and the form's field that sets it
FORM_FIELD = {"agents": "participants", "capabilities": "participants", "others": "participants", "served_by": "served_by:",
              "bench_options": "bench_option:", "options": "option:", "datasets": "datasets", "ssh": "ssh:"}
NUMBERS = {"limit": int, "repeat": int, "concurrency": int, "machines": int, "max_cost": float}
DEFAULTS = {"model_choice": "any", "repeat": "1", "concurrency": "4", "machines": "1", "backend": "local", "where": "here"}
LOGIN = ("port", "identity", "known_hosts")  # a host's `ssh` in the recipe, `ssh:<name>` in the form


@attrs.frozen(kw_only=True)
class Plan:
    recipe: dict[str, Any] | None  # the recipe as it is saved; None while it has problems
    file: Path | None
    problems: list[str]
    fields: dict[str, str]  # the form's field -> what is wrong with it
    warnings: list[str]
    jobs: list[dict[str, Any]]
    commands: list[str]
    bench_options: dict[str, str | None]  # each option: None where it applies to every job, else why not
    options: dict[str, str | None]
    option_values: dict[str, list[str]]  # an agent option's values every agent chosen allows
    fixed: dict[str, str]  # the options the leaderboard sets
    consent: bool  # an agent or capability on the local backend: the run needs consent
    chosen: bool = False  # an agent or a capability is chosen: their options are offered

    def json(self) -> dict[str, Any]:
        return {"recipe": self.recipe, "file": str(self.file) if self.file else None, "problems": self.problems,
                "fields": self.fields, "warnings": self.warnings, "jobs": self.jobs, "commands": self.commands, "bench_options": self.bench_options,
                "options": self.options, "option_values": self.option_values, "fixed": self.fixed, "consent": self.consent,
                "chosen": self.chosen}


def _text(form: dict[str, Any], key: str) -> str | None:
    value = form.get(key)
    return value.strip() or None if isinstance(value, str) else None


def _list(form: dict[str, Any], key: str) -> list[str]:
    value = form.get(key)
    items = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    return [v.strip() for v in items if isinstance(v, str) and v.strip()]


def _prefixed(form: dict[str, Any], prefix: str) -> dict[str, str]:
    return {k[len(prefix):]: v.strip() for k, v in form.items() if k.startswith(prefix) and isinstance(v, str) and v.strip()}


def _number(form: dict[str, Any], key: str, problems: list[Said]) -> int | float | None:
    text = _text(form, key)
    if text is None:
        return None
    try:
        return NUMBERS[key](text)
    except ValueError:
        kind = "a whole number" if NUMBERS[key] is int else "a number"
        problems.append((key, f"{key}: expected {kind}, found {text!r}"))
        return None


def _datasets(view: BenchView, form: dict[str, Any], problems: list[Said]) -> list[str]:
    names = [d for d in _list(form, "datasets") if d in {n for n, _, _ in view.datasets}]
    folder = _text(form, "folder") if view.folders is not None else None
    if folder is not None:
        if not Path(folder).is_absolute():
            problems.append(("folder", f"folder: expected an absolute path (the run reads it where it lies), found {folder!r}"))
        else:
            names.append(folder)
    return names


def _setups(view: BenchView, participants: list[str], model: str | None) -> set[str]:
    """The setups of the recipe's jobs: `yours` for an agent, capability or control; the Original's by its model."""
    setups = set()
    for participant in participants:
        if participant == "original":
            method = original_method(view.standard, model or view.paper_default)
            if method is not None:
                setups.add(method)
        else:
            setups.add(YOURS)
    return setups or {YOURS}


def _dataset_name(dataset: str) -> str:
    return Path(dataset).name if "/" in dataset else dataset


def bench_option_rules(view: BenchView, datasets: list[str], setups: set[str], given: dict[str, str]) -> dict[str, str | None]:
    """Each of the benchmark's options: None where it applies to every job (each dataset, each setup), else why not."""
    declared = view.options
    combos = [(_dataset_name(d), s) for d in (datasets or [view.default_dataset or ""]) for s in sorted(setups)]
    missed: dict[str, list[str]] = {name: [] for name in declared}
    for dataset, setup in combos:
        here = {n: o for n, o in declared.items() if not o.datasets or dataset in o.datasets}
        values = {n: given.get(n, o.default) for n, o in here.items() if given.get(n, o.default) is not None}
        held, why = applying(here, values, setup, view.ref)
        for name, option in declared.items():
            if name not in here:
                missed[name].append(f"option {name!r} of {view.ref} applies to datasets {', '.join(option.datasets or [])}, not {dataset!r}")
            elif name not in held:
                reason = why.get(name) or why_not(name, option, held, setup, view.ref)
                if reason is not None:
                    missed[name].append(reason)
    out: dict[str, str | None] = {}
    for name, reasons in missed.items():
        if not reasons:
            out[name] = None
        elif len(reasons) == len(combos):
            out[name] = reasons[0]
        else:
            out[name] = f"it applies to some of this recipe's jobs alone ({reasons[0]}): set it in a recipe of its own"
    return out


def _bench_options(view: BenchView, form: dict[str, Any], datasets: list[str], setups: set[str], fixed: dict[str, str],
                   problems: list[Said]) -> tuple[dict[str, str], dict[str, str | None]]:
    given = {n: v for n, v in _prefixed(form, "bench_option:").items() if n in view.options}
    given.update(fixed)
    rules = bench_option_rules(view, datasets, setups, given)
    chosen = {}
    for name, value in given.items():
        if rules.get(name) is not None or name in fixed:
            continue  # an option that does not apply is not set; the leaderboard's are set by --like-leaderboard
        if not view.options[name].allows(value):
            problems.append((f"bench_option:{name}", f"option {name}: {value!r} is not allowed ({_allowed(view.options[name])})"))
        chosen[name] = value
    return chosen, rules


def _allowed(option: Option) -> str:
    return f"one of {', '.join(option.values)}" if option.values is not None else f"a value matching {option.pattern}"


def agent_option_rules(view: BenchView, chosen: list[str]) -> tuple[dict[str, str | None], dict[str, list[str]]]:
    """Each agent option offered: None where every agent chosen declares it, else why not; and the values they all allow."""
    names = sorted({n for options in view.agent_options.values() for n in options})
    rules: dict[str, str | None] = {}
    values: dict[str, list[str]] = {}
    for name in names:
        declaring = [a for a in chosen if name in view.agent_options.get(a, {})]
        if not chosen:
            rules[name] = "choose an agent or a capability: its options are its own"
        elif len(declaring) < len(chosen):
            alone = ", ".join(declaring) or "none of the participants chosen"
            rules[name] = f"declared by {alone} alone: set it in a recipe of its own"
        else:
            rules[name] = None
        every = [view.agent_options[a][name].values for a in declaring]
        if every and all(v is not None for v in every):
            values[name] = [v for v in every[0] or [] if all(v in other for other in every[1:] if other is not None)]
    return rules, values


def _agent_options(view: BenchView, form: dict[str, Any], chosen: list[str], problems: list[Said]) -> tuple[dict[str, str], dict[str, str | None], dict[str, list[str]]]:
    rules, values = agent_option_rules(view, chosen)
    out = {}
    for name, value in _prefixed(form, "option:").items():
        if rules.get(name, "unknown") is not None:
            continue
        for agent in chosen:
            option = view.agent_options[agent][name]
            if not option.allows(value):
                problems.append((f"option:{name}", f"option {name} of {agent}: {value!r} is not allowed ({_allowed(option)})"))
        out[name] = value
    return out, rules, values


def _served_by(view: BenchView, form: dict[str, Any], provider: str | None) -> dict[str, list[str]]:
    """The providers that may answer each model field: OpenRouter's alone; a typed list kept as written, for the CLI to check."""
    if provider != "openrouter":
        return {}
    present = {"model": True, "simulator": view.simulator is not None, "judge": view.judge is not None}
    out = {}
    for field in FIELDS:
        text = _text(form, f"served_by:{field}")
        if text is not None and present[field]:
            out[field] = [part.strip() for part in text.split(",")]
    return out


def where_of(form: dict[str, Any], problems: list[Said]) -> dict[str, Any]:
    """Where the jobs run: here (nothing in the recipe), or a host over SSH (`host`, and `ssh` where ssh's defaults do not do)."""
    if _text(form, "where") != "host":
        return {}
    host = _text(form, "host")
    if host is None:
        problems.append(("host", "host: expected USER@HOST (or a name of your ~/.ssh/config) to run on"))
    login: dict[str, Any] = {name: _text(form, f"ssh:{name}") for name in LOGIN}
    if login["port"] is not None:
        try:
            login["port"] = int(login["port"])
        except ValueError:
            problems.append(("ssh:port", f"port: expected a whole number, found {login['port']!r}"))
    login = {k: v for k, v in login.items() if v is not None}
    return {"host": host, "ssh": login or None}


def recipe_of(view: BenchView, form: dict[str, Any]) -> tuple[dict[str, Any], Plan]:
    """The recipe the form says (as it would be saved), and what applies of the benchmark's and agents' options."""
    problems: list[Said] = []
    participants = _list(form, "participants")
    kind = view.participant_kind
    chosen = [p for p in participants if p not in OTHERS]
    choice = _text(form, "model_choice") or "any"
    if choice == "paper" and not view.paper_models or choice == "leaderboard" and view.standard.leaderboard is None:
        problems.append(("model_choice", f"model_choice: {view.ref} offers no {choice} choice"))
    model = _text(form, "model_paper") if choice == "paper" else _text(form, "model")
    provider = _text(form, "provider")
    datasets = _datasets(view, form, problems)
    board = view.standard.leaderboard
    fixed = dict(board.bench_options or {}) if choice == "leaderboard" and board is not None else {}
    setups = _setups(view, participants, model)
    bench_options, bench_rules = _bench_options(view, form, datasets, setups, fixed, problems)
    options, agent_rules, agent_values = _agent_options(view, form, chosen, problems)
    backend = _text(form, "backend") or "local"
    consent = backend == "local" and bool(chosen)
    raw: dict[str, Any] = {"name": _text(form, "name") or "", "benchmark": view.ref, "datasets": datasets,
                           kind: chosen, "others": [p for p in OTHERS if p in participants], "model_choice": choice,
                           "model": model, "provider": provider, "base_url": _text(form, "base_url"),
                           "served_by": _served_by(view, form, provider), "bench_options": bench_options, "options": options,
                           "backend": backend, "unsandboxed": consent and form.get("unsandboxed") in ("on", "true", True)}
    raw.update(where_of(form, problems))
    if choice == "any":
        raw["simulator_model"] = _text(form, "simulator_model") if view.simulator else None
        raw["judge_model"] = _text(form, "judge_model") if view.judge else None
    for key in NUMBERS:
        raw[key] = _number(form, key, problems)
    raw = {k: v for k, v in raw.items() if not (v is None or v is False or v == [] or v == {} or (k == "model_choice" and v == "any"))}
    plan = Plan(recipe=None, file=None, problems=[text for _, text in problems], fields=_fields(problems), warnings=[], jobs=[], commands=[], bench_options=bench_rules,
                options=agent_rules, option_values=agent_values, fixed=fixed, consent=consent, chosen=bool(chosen))
    return raw, plan


def plan_of(view: BenchView, form: dict[str, Any], recipes_dir: Path, jobs_dir: Path) -> Plan:
    """The form compiled: the recipe, its jobs and their commands, or what is wrong with it."""
    raw, plan = recipe_of(view, form)
    try:
        recipe = structure(raw, RunRecipe)
    except DefinitionError as exc:
        found = [(_field_of(p.path), p.render()) for p in exc.problems]
        return attrs.evolve(plan, problems=plan.problems + [text for _, text in found], fields={**_fields(found), **plan.fields})
    if plan.problems:
        return plan
    file = recipes_dir / f"{recipe.name}.json"
    jobs = compile_run(recipe)
    warnings = []
    taken = [job.name for job in jobs if (jobs_dir / job.name).exists()]
    if taken:
        warnings.append(f"{', '.join(taken)} exist{'s' if len(taken) == 1 else ''} already in {jobs_dir}: "
                        f"the run will be refused; give the recipe another name (a free one: {free_name(view.key, recipes_dir, jobs_dir)})")
    return attrs.evolve(plan, recipe=raw, file=file, warnings=warnings,
                        jobs=[{"name": j.name, "dataset": j.dataset, "participant": j.participant, "shard": j.shard,
                               "exists": j.name in taken, "argv": j.command(file), "host": j.host} for j in jobs],
                        commands=[shlex.join(j.command(file)) for j in jobs])


def _field_of(path: str) -> str | None:
    """The form's field a recipe's JSON path is about: `$.served_by.model` is `served_by:model`."""
    parts = path.removeprefix("$.").split(".")
    field = FORM_FIELD.get(parts[0], parts[0])
    return field + parts[1] if field.endswith(":") and len(parts) > 1 else None if field.endswith(":") else field


def _fields(problems: list[Said]) -> dict[str, str]:
    out: dict[str, str] = {}
    for field, text in problems:
        if field is not None:
            out.setdefault(field, text)
    return out


def free_name(key: str, recipes_dir: Path, jobs_dir: Path) -> str:
    """`<key>-<n>`: the first n with no saved recipe and no job of that name."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-") or "run"
    jobs = {p.name for p in jobs_dir.iterdir()} if jobs_dir.is_dir() else set()
    n = 1
    while (recipes_dir / f"{base}-{n}.json").exists() or any(j.startswith(f"{base}-{n}-") for j in jobs):
        n += 1
    return f"{base}-{n}"


def form_of(recipe: dict[str, Any], view: BenchView) -> dict[str, Any]:
    """A saved recipe as the form's values, to draw it again."""
    declared = {n for n, _, _ in view.datasets}
    datasets = list(recipe.get("datasets") or [])
    form: dict[str, Any] = {
        "name": recipe.get("name", ""), "datasets": [d for d in datasets if d in declared],
        "folder": next((d for d in datasets if d not in declared), ""),
        "participants": [*recipe.get("agents", []), *recipe.get("capabilities", []), *recipe.get("others", [])],
        "model_choice": recipe.get("model_choice", "any"), "provider": recipe.get("provider") or "",
        "base_url": recipe.get("base_url") or "", "simulator_model": recipe.get("simulator_model") or "",
        "judge_model": recipe.get("judge_model") or "", "backend": recipe.get("backend", "local"),
        "unsandboxed": "on" if recipe.get("unsandboxed") else "",
        "where": "host" if recipe.get("host") else "here", "host": recipe.get("host") or "",
    }
    for name in LOGIN:
        value = (recipe.get("ssh") or {}).get(name)
        form[f"ssh:{name}"] = "" if value is None else str(value)
    form["model_paper" if form["model_choice"] == "paper" else "model"] = recipe.get("model") or ""
    for field, slugs in (recipe.get("served_by") or {}).items():
        form[f"served_by:{field}"] = ", ".join(slugs)
    for name, value in (recipe.get("bench_options") or {}).items():
        form[f"bench_option:{name}"] = value
    for name, value in (recipe.get("options") or {}).items():
        form[f"option:{name}"] = value
    for key in NUMBERS:
        value = recipe.get(key)
        form[key] = "" if value is None else str(value)
    for key, value in DEFAULTS.items():
        form[key] = form.get(key) or value
    return form


def new_form(view: BenchView, name: str) -> dict[str, Any]:
    """The form of a benchmark just chosen: its default dataset, the defaults of every option."""
    form: dict[str, Any] = {**DEFAULTS, "name": name, "datasets": [view.default_dataset] if view.default_dataset else [],
                            "participants": [], "folder": "", "limit": "", "max_cost": "", "provider": "", "base_url": "",
                            "model": "", "simulator_model": "", "judge_model": "", "unsandboxed": "", "host": "",
                            **{f"ssh:{name}": "" for name in LOGIN}}
    for name_, option in view.options.items():
        if option.default is not None:
            form[f"bench_option:{name_}"] = option.default
    return form
