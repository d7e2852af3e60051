"""Everything a run settles before its first unit: what runs, with what, on what.

A run refused here is refused whole (`nullius: run refused: ...`), before any
unit starts: an unknown dataset or option, a pair that does not fit, a
missing key or program, a backend whose daemon does not answer, data that
cannot be had, an environment that cannot be installed. Every check that
needs no install comes first (`check`): a run that cannot go is refused in
seconds, before anything is installed, cloned or downloaded (`_make_ready`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from nullius_core.catalogue.catalogue import Entry
from nullius_core.catalogue.listing import resolve_benchmark
from nullius_core.contracts.driver import DriverLaunch
from nullius_core.contracts.licences import Handout
from nullius_core.contracts.refused import RunRefused
from nullius_core.definitions import Dataset, DefinitionError, ResolvedBenchmark, load
from nullius_core.licences import SecretStore, declared_secrets
from nullius_core.licences.handout import hand_out
from nullius_core.plugins.registries import BackendSpec, RunnerSpec
from nullius_core.relay import upstreams
from nullius_core.relay.pins import Pin
from nullius_core.relay.upstream import Upstream
from nullius_core.run import data, install, upstream
from nullius_core.run.bench_options import YOURS, applying, check_hosts, embeddings_model, refuse_given
from nullius_core.run.checks import check_backend, refuse_folder, resolve_options
from nullius_core.run.folders import FolderDataset, FolderProblem, names_a_folder, read_folder
from nullius_core.run.launch import driver_launch, unfilled_install
from nullius_core.run.participant import CheckedParticipant, check_participant, make_ready
from nullius_core.run.progress import Progress
from nullius_core.run.serving import run_pins
from nullius_core.run.setups import ORIGINAL, PreparedOriginal, choose
from nullius_core.run.spec import RunSpec
from nullius_core.run.voices import Voice, voices_for
from nullius_core.session import Session


@attrs.frozen(kw_only=True)
class Prepared:
    entry: Entry
    bench: ResolvedBenchmark
    dataset_name: str
    dataset: Dataset
    options: dict[str, str]
    runner: RunnerSpec
    backend: BackendSpec
    launch: DriverLaunch
    dataset_file: Path | None
    install_dir: Path | None
    upstream_dir: Path | None
    agent: Any = None  # a PreparedAgent for an agent run; None for a control
    proofs: dict[str, Any] | None = None  # where the benchmark's proofs come from (catalogue.Standing.as_json); None for a kit
    voices: dict[str, Voice] = attrs.field(factory=dict)  # the simulated user and the judge the run asks (voices.py)
    voice_upstream: Upstream | None = None  # a control's: where its judge is asked (an agent's run asks its own provider)
    original: PreparedOriginal | None = None  # No agent · Original: the upstream's own answerer (setups.py)
    folder: FolderDataset | None = None  # a user's folder as the dataset (--dataset PATH): the files it holds, pinned
    pins: dict[str, Pin] = attrs.field(factory=dict)  # model sent -> the providers that may answer it, on every route (serving.py)
    embeddings: str | None = None  # a chosen option value's needs.embeddings: the model of the run's own relay (bench_options.py)
    bench_upstream: Upstream | None = None  # where that relay forwards: the OpenAI provider
    bench_route: dict[str, str] | None = None  # once it runs: its {base_url, key}, the driver's and its MCP servers' OPENAI_BASE_URL

    @property
    def units_pin(self) -> int | None:
        """How many units `units` must give: the dataset's pin; None for a folder, whose units are what it holds."""
        return None if self.folder is not None else self.dataset.units

    @property
    def source_dir(self) -> Path:
        """What a task's own image builds from and copies in from: the dataset's folder, the upstream's clone, or the benchmark's folder."""
        return Path(self.folder.path if self.folder is not None else self.upstream_dir or self.entry.folder)

    @property
    def relay_upstream(self) -> Upstream | None:
        """Where the run's relay forwards: the agent's provider, or a judged control's; None: the run has no relay."""
        own = getattr(self.agent, "upstream", None) or (self.original.upstream if self.original is not None else None)
        return own if own is not None else self.voice_upstream

    @property
    def setup_request(self) -> dict[str, str] | None:
        """What `units`, `answer` and `score` are sent as `setup` (an Original run's), else None."""
        return self.original.setup.request() if self.original is not None else None

    @property
    def score_seconds(self) -> float:
        return float(self.bench.limits.score_seconds or 60)

    @property
    def turn_seconds(self) -> float:
        return float(self.bench.limits.turn_seconds or 600)


def _kit(session: Session, port_name: str) -> tuple[Entry, ResolvedBenchmark]:
    port = session.ports.get(port_name)
    if port is None or port.kit_folder is None:
        raise RunRefused(f"the port {port_name!r} has no kit")
    file = port.kit_folder / "standard.json"
    standard = load(file)
    owner = next((r.plugin for r in session.ports.entries() if r.name == port_name), "ports")
    key = port_name.replace("/", "-").replace(".", "-")
    entry = Entry(kind="benchmark", key=key, folder=port.kit_folder, file=file, origin=owner)
    return entry, standard.resolve(key)


@attrs.frozen(kw_only=True)
class Checked:
    """What a run's checks settled before anything is installed, cloned or downloaded."""

    entry: Entry
    bench: ResolvedBenchmark
    dataset_name: str
    dataset: Dataset
    folder: FolderDataset | None
    backend: BackendSpec
    options: dict[str, str]
    runner: RunnerSpec
    participant: CheckedParticipant | None = None  # an agent's or a capability's; None for a control or an Original
    original: PreparedOriginal | None = None
    voices: dict[str, Voice] = attrs.field(factory=dict)
    voice_upstream: Upstream | None = None
    embeddings: str | None = None
    bench_upstream: Upstream | None = None
    clone: Path | None = None  # the upstream's clone, when one is made already
    dataset_file: Path | None = None  # the dataset's file when it is at hand (the benchmark's own, the cache's, a folder's)


def prepare(session: Session, spec: RunSpec, progress: Progress, scratch: Path) -> Prepared:
    """The run settled: first every check that needs no install (cheap, seconds), then the installs, clones and downloads (slow)."""
    checked = check(session, spec, progress, scratch)
    return _make_ready(session, spec, checked, progress, scratch)


def check(session: Session, spec: RunSpec, progress: Progress, scratch: Path) -> Checked:
    """Everything a run can be refused for without installing, cloning or downloading anything, in the order a user fixes it."""
    entry, bench = _benchmark(session, spec)
    dataset_name, dataset, folder = choose_dataset(bench, spec.dataset)
    backend = session.backends.get(spec.backend)
    if backend is None:
        known = ", ".join(session.backends.names()) or "none registered"
        raise RunRefused(f"no backend named {spec.backend!r} (backends: {known})")
    participant = original = None
    if (spec.variant is not None or spec.effort) and (spec.participant == ORIGINAL or spec.control is not None):
        raise RunRefused(f"a variant or a reasoning effort is an agent's, not {spec.participant}'s")
    if spec.participant == ORIGINAL:
        original = _original(session, spec, bench)
    options = _bench_options(bench, spec.bench_options, dataset_name, original.setup.name if original is not None else YOURS)
    if spec.participant != ORIGINAL and spec.control is None:
        participant = check_participant(session, spec, bench, backend, progress, RunRefused, scratch)
    voices = voices_for(bench, spec, options, RunRefused)
    voice_upstream = _voice_upstream(session, spec, bench, voices) if spec.control is not None and voices else None
    assert bench.driver is not None
    runner = session.runners.get(f"driver:{bench.driver.runner}")
    if runner is None:
        known = ", ".join(n.split(":", 1)[1] for n in session.runners.names() if n.startswith("driver:")) or "none"
        raise RunRefused(f"{bench.ref}'s driver needs the runner {bench.driver.runner!r}, which no plugin registers (runners: {known})")
    check_hosts(bench, options)
    embeddings = embeddings_model(bench, options)
    bench_upstream = _bench_upstream(session, bench, embeddings) if embeddings else None
    check_backend(backend)
    clone = upstream.existing_clone(session.paths, entry.key, bench.upstream)
    dataset_file = folder.path if folder is not None else _dataset_at_hand(session, entry, bench, dataset_name, dataset, clone, progress)
    return Checked(entry=entry, bench=bench, dataset_name=dataset_name, dataset=dataset, folder=folder, backend=backend, options=options,
                   runner=runner, participant=participant, original=original, voices=voices, voice_upstream=voice_upstream,
                   embeddings=embeddings, bench_upstream=bench_upstream, clone=clone, dataset_file=dataset_file)


def _benchmark(session: Session, spec: RunSpec) -> tuple[Entry, ResolvedBenchmark]:
    """The benchmark (or the port's kit) asked for, its definition and folder sound, with a driver."""
    try:
        entry, bench = _kit(session, spec.kit) if spec.kit else resolve_benchmark(session.catalogue, spec.benchmark)
    except DefinitionError as exc:
        raise RunRefused("the benchmark's definition is invalid:\n" + exc.render()) from None
    except LookupError as exc:
        raise RunRefused(str(exc.args[0])) from None
    refuse_folder(entry, "the benchmark's definition is invalid")
    if bench.standard.kit is not None and spec.kit is None:
        raise RunRefused(f"{bench.ref} is the kit of {bench.standard.kit.port}: kits prove agents (nullius conform), they are not run")
    if bench.driver is None:
        raise RunRefused(f"{bench.ref} has no driver")
    unfilled_install(bench)
    return entry, bench


def _dataset_at_hand(session: Session, entry: Entry, bench: ResolvedBenchmark, name: str, dataset: Dataset, clone: Path | None,
                     progress: Progress) -> Path | None:
    """The dataset's file when nothing need be fetched; else None, once it is known that it can be fetched (nothing is)."""
    assert bench.driver is not None
    install = bench.driver.install
    if install is not None and install.project is not None and clone is None and bench.upstream is not None:
        try:  # the driver's environment builds the upstream's project: its clone must be possible
            _reach(bench)
        except upstream.UpstreamError as exc:
            raise RunRefused(f"the driver's environment of {bench.ref} cannot be installed: {exc}") from None
    if dataset.path is None and dataset.url is None:
        return None
    try:
        found = data.at_hand(session.paths, entry.key, name, dataset, entry.folder, progress)
        if found is None:
            pinned = bench.upstream is not None and bench.upstream.repository and bench.upstream.tested
            data.can_be_fetched(entry.key, name, dataset, clone, (lambda: _reach(bench)) if pinned else None, install is not None)
    except data.DataError as exc:
        raise RunRefused(str(exc)) from None
    return found


def _reach(bench: ResolvedBenchmark) -> None:
    assert bench.upstream is not None
    upstream.reachable(bench.upstream)


def _make_ready(session: Session, spec: RunSpec, checked: Checked, progress: Progress, scratch: Path) -> Prepared:
    """The slow part, once every check passed: the upstream's clone, the dataset's fetch, the driver's and the agent's installs.

    The dataset is fetched before the environments are installed (unless it
    lies in the driver's package): a download that fails refuses the run
    before minutes of installs. The agent, whose install is the longest, is last.
    """
    entry, bench, paths = checked.entry, checked.bench, session.paths
    assert bench.driver is not None
    install_spec = bench.driver.install
    clone, dataset_file = checked.clone, checked.dataset_file
    if install_spec is not None and install_spec.project is not None and clone is None and bench.upstream is not None:
        try:
            clone = _clone(session, entry, bench, progress)
        except data.DataError as exc:
            raise RunRefused(f"the driver's environment of {bench.ref} cannot be installed: {exc}") from None
    if dataset_file is None and checked.dataset.package is None:
        dataset_file = _fetch_dataset(session, checked, progress, None)
    install_dir = install_python = None
    if install_spec is not None:
        try:
            install_dir = install.ensure(paths, entry.key, install_spec, progress, upstream=clone)
        except install.InstallError as exc:
            raise RunRefused(f"the driver's environment of {bench.ref} cannot be installed: {exc}") from None
        venv_python = install_dir / ".venv" / "bin" / "python"
        install_python = venv_python if venv_python.exists() else None
    if dataset_file is None and checked.dataset.package is not None:
        dataset_file = _fetch_dataset(session, checked, progress, install_python)
    agent = make_ready(session, checked.participant, progress, RunRefused) if checked.participant is not None else None
    clone = clone or upstream.existing_clone(paths, entry.key, bench.upstream)
    launch = driver_launch(bench, entry, dataset_file, clone, install_dir, checked.options, scratch)
    prepared = Prepared(
        entry=entry, bench=bench, dataset_name=checked.dataset_name, dataset=checked.dataset, options=checked.options, runner=checked.runner,
        backend=checked.backend, launch=launch, dataset_file=dataset_file, install_dir=install_dir, upstream_dir=clone, folder=checked.folder,
        agent=agent, proofs=None if spec.kit else session.catalogue.standing(entry, bench.version).as_json(),
        voices=checked.voices if agent is None or getattr(agent, "upstream", None) is not None else {},
        voice_upstream=checked.voice_upstream, original=checked.original, embeddings=checked.embeddings, bench_upstream=checked.bench_upstream,
    )
    return attrs.evolve(prepared, pins=run_pins(spec, prepared))


def _fetch_dataset(session: Session, checked: Checked, progress: Progress, install_python: Path | None) -> Path | None:
    """The dataset's file fetched into the cache: by URL, from the upstream's clone, or from the driver's package."""
    entry, bench = checked.entry, checked.bench
    try:
        return data.resolve(
            session.paths, entry.key, checked.dataset_name, checked.dataset, here=entry.folder, progress=progress,
            upstream_dir=(lambda: _clone(session, entry, bench, progress)) if bench.upstream and bench.upstream.repository else None,
            install_python=install_python,
        )
    except data.DataError as exc:
        raise RunRefused(str(exc)) from None


def choose_dataset(bench: ResolvedBenchmark, asked: str | None) -> tuple[str, Dataset, FolderDataset | None]:
    """The dataset a run asked for: a declared one by name, or a folder by path where the benchmark takes folders."""
    folders = bench.dataset_folders
    if names_a_folder(asked) and asked not in bench.datasets:
        if folders is None:
            raise RunRefused(f"{bench.ref} takes no folder as its dataset (datasets: {', '.join(bench.datasets)}); {asked} is not one of them")
        try:
            folder = read_folder(str(asked))
        except FolderProblem as exc:
            raise RunRefused(str(exc)) from None
        summary = f"the folder {folder.path} ({len(folder.files)} files)"
        return folder.name, Dataset(units=len(folder.files), summary=summary, sha256=folder.sha256, environment=folders.environment), folder
    name = asked or bench.default_dataset
    if name is None:
        assert folders is not None  # a benchmark without datasets takes folders (its definition is checked)
        raise RunRefused(f"{bench.ref} takes a folder as its dataset: --dataset PATH ({folders.summary})")
    if name not in bench.datasets:
        takes = f"; or a folder, --dataset PATH ({folders.summary})" if folders is not None else ""
        raise RunRefused(f"{bench.ref} has no dataset {name!r} (datasets: {', '.join(bench.datasets) or 'none'}{takes})")
    return name, bench.datasets[name], None


def _original(session: Session, spec: RunSpec, bench: ResolvedBenchmark) -> PreparedOriginal:
    """The upstream's own answerer: its setup chosen by the model, its calls through the run's relay."""
    try:
        upstream = upstreams.resolve(session, spec.provider, spec.base_url)
    except upstreams.RelayRefused as exc:
        raise RunRefused(str(exc)) from None
    if upstream.provider.serve is not None:
        raise RunRefused(f"{bench.ref} original runs on a remote provider; {upstream.provider.name!r} serves its own model")
    choice, turn_seconds = choose(bench, spec.model, upstream.provider.name, RunRefused)
    return PreparedOriginal(setup=choice, upstream=upstream, turn_seconds=turn_seconds)


def _voice_upstream(session: Session, spec: RunSpec, bench: ResolvedBenchmark, voices: dict[str, Voice]) -> Upstream:
    """A judged benchmark's control calls no model but its judge, asked through the run's relay on the provider given."""
    try:
        upstream = upstreams.resolve(session, spec.provider, spec.base_url)
    except upstreams.RelayRefused as exc:
        raise RunRefused(f"{bench.ref} is judged ({voices['judge'].model}): its {spec.control} run asks the judge, and {exc}") from None
    if upstream.provider.serve is not None:
        raise RunRefused(f"{bench.ref}'s judge is asked of a remote provider: {upstream.provider.name!r} serves its own model")
    return upstream


def _bench_upstream(session: Session, bench: ResolvedBenchmark, model: str) -> Upstream:
    """An option whose driver embeds calls the OpenAI provider through the run's own relay, which holds its key."""
    try:
        return upstreams.resolve(session, "openai", None)
    except upstreams.RelayRefused as exc:
        raise RunRefused(f"{bench.ref}'s driver embeds with {model} through the run's own relay, which wants the OpenAI provider: {exc}") from None


def _clone(session: Session, entry: Entry, bench: ResolvedBenchmark, progress: Progress) -> Path:
    assert bench.upstream is not None
    try:
        return upstream.ensure_clone(session.paths, entry.key, bench.upstream, progress)
    except upstream.UpstreamError as exc:
        raise data.DataError(str(exc)) from None


def _bench_options(bench: ResolvedBenchmark, given: dict[str, str], dataset: str, setup: str) -> dict[str, str]:
    """The benchmark's options that apply to this run (bench_options.py), defaults included; a given one that does not is refused."""
    values = resolve_options(bench.standard.options or {}, given, dataset, bench.ref)
    held, why = applying(bench.standard.options or {}, values, setup, bench.ref)
    refuse_given(given, why)
    return held


def with_driver_licences(secrets_dir: Path, prepared: Prepared, run: str) -> tuple[Prepared, Handout]:
    """The driver's licences (to: driver) that are set: in its environment, files under /dev/shm (removed by the Handout)."""
    store = SecretStore(secrets_dir, prepared.entry.key)
    wanted = [s for s in declared_secrets(prepared.bench).values() if s.to == "driver"]
    licences = hand_out(store, wanted, "driver", run, allow_missing=True)
    if licences.values or licences.files:
        prepared = attrs.evolve(prepared, launch=attrs.evolve(prepared.launch, env={**prepared.launch.env, **licences.env()}))
    return prepared, licences


