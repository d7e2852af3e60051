"""The contracts a plugin implements or calls, and the one list of the core's public API.

The modules of this package import only the definitions (`nullius_core.definitions`),
`nullius_core.paths` and each other, never the engine (`nullius_core.run`) or the
relay (`nullius_core.relay`): a plugin built on them sits beside the engine, not
on top of its internals. `PUBLIC_API` below names every module a plugin may
import; docs/plugins.md ("The public API") shows the same list, and
tests/test_boundary.py holds every plugin, bundled or not, to it.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class PublicModule:
    module: str  # a dotted module name; with `whole`, its submodules too
    holds: str  # what a plugin finds there
    whole: bool = False


PUBLIC_API: tuple[PublicModule, ...] = (
    PublicModule("nullius_core", "`hookimpl`, the marker for hook implementations"),
    PublicModule("nullius_core.hookspecs", "what each hook means"),
    PublicModule("nullius_core.plugins", "the registries and the specs registered in them (`BackendSpec`, `ProviderSpec`, `RunnerSpec`, `ModelApiSpec`, ...)"),
    PublicModule("nullius_core.ports", "`Port`, `fit` and `needs_of` (the ports a run with these options needs)"),
    PublicModule("nullius_core.definitions", "the models of every definition file", whole=True),
    PublicModule("nullius_core.contracts.agent", "`AgentProtocol`, `AgentProcess`, `AgentLaunch`, `Conversation`, `AgentOutcome`, `McpServerEntry`: what an agent protocol or a backend's room deals in"),
    PublicModule("nullius_core.contracts.backend", "`Backend`, `RunContext`, `UnitPlace`, `AgentRoom`, `RelayRoom`, `RouteOptions`, `init_repository`, `place_here` (a unit's place on this machine: its workspace a repository, its HOME), `opened` (a room opened, closed if it fails to): what a backend implements"),
    PublicModule("nullius_core.contracts.driver", "`Driver`, `DriverLaunch`, `DriverError`: what a driver runner implements"),
    PublicModule("nullius_core.contracts.environment", "`UnitEnvironment`: the environment a backend makes a unit's place in"),
    PublicModule("nullius_core.contracts.licences", "`Handout`, `SecretFile`: the licences a backend passes on to an agent"),
    PublicModule("nullius_core.contracts.own_image", "`OwnUnit`, `Steps`, `Verify`, `Verified`, `Box`, `NotRun`, `VerifyProblem`: what a backend that runs tasks' own images reads and implements"),
    PublicModule("nullius_core.contracts.lost", "`UnitLost`: what a backend's room raises when the place its agent ran is gone (a node lost); the trial is `NodeLostError`"),
    PublicModule("nullius_core.contracts.refused", "`RunRefused`: what a backend's `start` raises to refuse a run before its first unit"),
    PublicModule("nullius_core.contracts.events", "`RunStarted`, `UnitFinished`, `RunFinished`: the observer hooks' payloads"),
    PublicModule("nullius_core.contracts.model_api", "`ModelApi`, `Facts`, `Usage`, `Sent`, `error_of`: what a model-API adapter implements"),
    PublicModule("nullius_core.contracts.sse", "`Event`: server-sent events as a model-API adapter reads them"),
    PublicModule("nullius_core.processes", "`start_process`, `end_process`, `kill_process`, `current`, `CappedLog`, `CappedCopy`, `GroupProcess`, `MARKER`: a process of the run (it dies with the run), its stderr kept capped; an agent as a process group; `Lifetime`: a lifetime of one's own, for a process that starts others away from the run (a backend's node: its watcher ends them when that process dies)"),
    PublicModule("nullius_core.sandbox", "`mounts` (the folders a sandbox shows), `door` (`McpListeners`, `tcp_behind`, `pipe_both`, `BRIDGE`): what a backend that isolates an agent shares", whole=True),
    PublicModule("nullius_core.node_relay", "`start_node_relay`, `new_token`: a relay of the run started where a backend runs its units (the ray backend's nodes), given the provider and its key in memory"),
    PublicModule("nullius_core.failures", "`OUTCOMES` (the outcomes a trial may have), `KINDS` and `kind_of` (the table of failure kinds): for a plugin that reads or shows jobs"),
    PublicModule("nullius_core.links", "`noted`: a link not copied out of a workspace or container, noted as the core notes the workspace's"),
    PublicModule("nullius_core.heartbeat", "`heartbeat`, `beating`: a long step (an image build, a runtime's install) said every 30 s while it runs (`state=running seconds=N`), from a thread, through the `progress` the plugin is handed"),
    PublicModule("nullius_core.logs", "`get_logger(name)`: a logger whose lines go to stderr in the command's `--log-format` (a plugin logs through it, never structlog's unconfigured default, which prints to stdout)"),
    PublicModule("nullius_core.paths", "`Paths`: where Nullius keeps installs, images, jobs and the user catalogue"),
    PublicModule("nullius_core.jsonfast", "`loads`, `dumps`: JSON on the relay's hot path (orjson)"),
    PublicModule("nullius_core.handed", "`within`, `plain_name`, `read_bytes`, `read_json`, `copy_file`, `links_out`, `Refused`: a job or folder someone else handed the user, read without following a link out of it, taking a record's name as a path or reading past a bound"),
    PublicModule("nullius_core.fsutil", "`append_line`, `read_json_lines`: records written a line at a time, readable after a kill"),
    PublicModule("nullius_core.recipes", "`RunRecipe`, `ProveRecipe`, `ConformRecipe`, `compile_run`, `PlannedJob`: the recipes `--from-run` reads, and the jobs a run recipe compiles to"),
    PublicModule("nullius_core.licences", "`SecretStore`, `declared_secrets`: a benchmark's licences as kept here, for a command that hands them on (the app's run on a host)"),
    PublicModule("nullius_core.secret_names", "`without_secrets`, `looks_secret`: an environment without the variables named like secrets, for an installer a plugin runs"),
    PublicModule("nullius_core.jobs.records", "`iso`, `utcnow`: timestamps as the job's records write them"),
    PublicModule("nullius_core.jobs.workspace_patch", "`workspace_patch`, `first_commit`, `EMPTY_TREE`, `PatchError`: a workspace's changes as one patch against its first commit, untracked files included, its .git untouched"),
    PublicModule("nullius_core.catalogue.checks", "`check_file`: a definition file's problems, as `nullius check` reports them"),
    PublicModule("nullius_core.testing", "helpers and fixtures for plugins' tests: the scripted fake model, the kits' players, the backend contract", whole=True),
)


def is_public(module: str) -> bool:
    """Whether a plugin may import `module` (a dotted name)."""
    for entry in PUBLIC_API:
        if module == entry.module or (entry.whole and module.startswith(entry.module + ".")):
            return True
    return False
