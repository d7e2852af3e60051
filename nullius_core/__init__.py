"""Nullius core: the hook specifications, the plugin manager, definitions, ports and fit, the CLI.

The public API a plugin may import:

* ``nullius_core.hookimpl``: the marker for hook implementations;
* ``nullius_core.hookspecs``: what each hook means;
* ``nullius_core.plugins``: the registries and the specs registered in them
  (``BackendSpec``, ``ProviderSpec``, ``RunnerSpec``, ``ModelApiSpec``);
* ``nullius_core.ports``: ``Port`` and ``fit``;
* ``nullius_core.definitions``: the models of every definition file;
* ``nullius_core.catalogue``, ``nullius_core.paths``, ``nullius_core.session``;
* ``nullius_core.run.agent`` (``AgentProcess``, ``AgentLaunch``, ``Conversation``,
  ``AgentOutcome``, ``McpServerEntry``): what an agent protocol or a backend's room deals in;
* ``nullius_core.testing.kits``: how a model plays the kits, for fake-model scripts;
* ``nullius_core.run.backend`` (``Backend``, ``RunContext``, ``UnitPlace``, ``AgentRoom``,
  ``RelayRoom``, ``RouteOptions``, ``init_repository``), ``nullius_core.run.driver``
  (``Driver``, ``DriverLaunch``, ``DriverError``), ``nullius_core.run.events`` (the
  observers' payloads): what backend, runner and observer plugins implement or read;
* ``nullius_core.run.own_image`` (``OwnUnit``, ``Steps``, ``Verify``, ``Verified``, ``Box``,
  ``NotRun``, ``VerifyProblem``): what a backend that runs tasks' own images reads and implements;
* ``nullius_core.run.links`` (``noted``): a link a backend will not copy out of a container, noted as
  the core notes the workspace's;
* ``nullius_core.run.lifetime`` (``start_process``, ``end_process``, ``kill_process``) and
  ``nullius_core.run.capped`` (``CappedLog``, ``CappedCopy``): how a backend or runner starts a
  process of the run (it dies with the run) and keeps its stderr capped;
* ``nullius_core.relay.api`` (``ModelApi``, ``Facts``, ``Usage``, ``Sent``) and
  ``nullius_core.relay.sse``: what a model-API adapter implements;
* ``nullius_core.testing``: helpers for plugin authors' tests.

Anything else (a module or name starting with ``_``, the CLI's internals) may
change without notice. The core imports no plugin.
"""

from nullius_core.markers import ENTRY_POINT_GROUP, hookimpl, hookspec

__version__ = "0.1.0"

__all__ = ["ENTRY_POINT_GROUP", "__version__", "hookimpl", "hookspec"]
