"""`nullius fidelity AGENT[@VERSION] --model M --unsandboxed`: ACP's requests against the agent's own CLI's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from nullius_core.cli.base import Refused, refusals, session_for
from nullius_core.relay import upstreams
from nullius_core.run.prepare import RunRefused


@click.command("fidelity")
@click.argument("participant", metavar="AGENT[@VERSION]")
@click.option("--model", help="The model the relay sends every call as, both ways.")
@click.option("--option", "agent_options", multiple=True, metavar="NAME=VALUE", help="An option of the agent's. Repeatable.")
@click.option("--provider", help="The model provider the relay forwards to.")
@click.option("--base-url", help="The provider's base URL, ending at its /v1.")
@click.option("--unsandboxed", is_flag=True, help="Consent to run the agent and its CLI on this machine, which is not a sandbox.")
@click.option("--jobs-dir", type=click.Path(path_type=Path), help="Where the record (fidelity.json) goes.")
@click.option("--json", "as_json", is_flag=True)
@refusals
def fidelity_cmd(participant: str, model: str | None, agent_options: tuple[str, ...], provider: str | None, base_url: str | None,
                 unsandboxed: bool, jobs_dir: Path | None, as_json: bool) -> None:
    """Does ACP send the model the same requests as the agent's own command? Exit 1 when a field differs."""
    from nullius_core.cli.run_commands import CANCELLED_EXIT, _jobs_dir, _pairs
    from nullius_core.run.fidelity import FidelityRequest, fidelity
    from nullius_core.run.progress import Progress

    session = session_for(click.get_current_context())
    chosen = upstreams.model_for(session, provider, model)
    if not chosen:
        raise Refused("fidelity refused: it needs --model (the model both ways are sent as)")
    request = FidelityRequest(participant=participant, model=chosen, jobs_dir=_jobs_dir(jobs_dir, session.paths.jobs_dir),
                              provider=provider, base_url=base_url, unsandboxed=unsandboxed, agent_options=_pairs(agent_options, "--option"))
    try:
        verdict = fidelity(session, request, Progress())
    except RunRefused as exc:
        raise Refused(f"fidelity refused: {exc}") from None
    except KeyError as exc:
        raise Refused(f"fidelity refused: {participant}: no such version ({exc.args[0]})") from None
    except KeyboardInterrupt:  # its runs' processes are ended and its scratch removed on the way out
        click.echo("cancelled: nothing is recorded and no verdict written", err=True)
        sys.exit(CANCELLED_EXIT)
    if as_json:
        click.echo(json.dumps({"verdict": verdict.verdict, "fields": verdict.fields, "noise": verdict.noise, "passed": verdict.passed, "record": str(verdict.record)}))
    else:
        click.echo(f"{participant}: {verdict.verdict}" + (f": {', '.join(verdict.fields)}" if verdict.fields else ""))
        if verdict.noise:
            click.echo(f"not compared (they differ between two runs of one way): {', '.join(verdict.noise)}")
        click.echo(f"runs that did the unit's work: acp {verdict.passed['acp']}, cli {verdict.passed['cli']}")
        click.echo(f"record: {verdict.record / 'fidelity.json'}")
    if verdict.verdict != "same":
        sys.exit(1)
