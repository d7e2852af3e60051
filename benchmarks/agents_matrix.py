"""Every real agent on GSM8K, HumanEval and Harbor tasks, `--limit 3`, locally and on docker, against the fake model.

    .venv/bin/python benchmarks/agents_matrix.py [--agents claude,qwen] [--cells gsm8k:local,harbor:docker] [--runs 1]

For each agent: one isolated home (the installs in a shared STANDARD_DIR,
`--standard-dir`, so an agent is installed from its registry once), the
provider's key given to Nullius only, and the fake model serving the player
the agent's distribution ships (`nullius_agent_<name>.player:respond`). Each
cell is one `nullius run BENCH AGENT --limit 3` on a backend. What a cell must
show, or the script says it failed and exits non-zero: three trials, none
errored (the fake model answers nothing right, so they are scored failures),
every trial's model calls through its relay as the run's model, and the key
in no file of the job. Printed: each cell's outcomes, seconds per unit
(median over `--runs`) and the ratio to the reference agent in the same cell,
measured in the same run, one agent after the other.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import measure  # noqa: E402

from nullius_core.testing import isolated_env  # noqa: E402
from nullius_core.testing.fake_model import running_fake_model  # noqa: E402
from nullius_core.testing.helpers import files_holding  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
NULLIUS = REPO / ".venv" / "bin" / "nullius"
from nullius_bench_gsm8k.plugin import TEST_SPLIT as GSM8K_SEED  # noqa: E402 - the test split the plugin ships
HARBOR_TASKS = REPO / "examples" / "harbor-tasks"
HARBOR_CHOSEN = ("fix-invoice-totals", "sales-summary-csv", "ledger-cli-steps")  # a repository fix, data, steps
SUMMARY = re.compile(r"stage=done state=\w+ job=\S+ (trials=\d+ (?:passed=\d+ failed=\d+|scored=\d+) errored=\d+ cancelled=\d+)")


@attrs.frozen
class Agent:
    name: str  # its key in the catalogue
    model: str
    provider: str
    key_env: str
    base_url: str = "openai_base_url"  # the fake model's attribute for this provider
    drop: tuple[str, ...] = ()  # the agent's own variables, removed from its home's environment

    @property
    def player(self) -> str:
        return f"nullius_agent_{self.name.replace('-', '_')}.player:respond"

    @property
    def key(self) -> str:
        return f"sk-upstream-held-by-the-relay-{self.name}-0123456789"


AGENTS = {a.name: a for a in (
    Agent("reference", "fake-model", "openai-compatible", "OPENAI_COMPATIBLE_API_KEY"),
    Agent("claude", "fake-claude", "anthropic", "ANTHROPIC_API_KEY", drop=("ANTHROPIC_",)),
    Agent("codex", "fake-codex", "openai", "OPENAI_API_KEY", drop=("CODEX_",)),
    Agent("copilot", "fake-copilot", "openai", "OPENAI_API_KEY", drop=("COPILOT_", "GH_", "GITHUB_")),
    Agent("fast-agent", "fake-fast-agent", "openai", "OPENAI_API_KEY", drop=("GENERIC_", "FAST_AGENT_")),
    Agent("gemini", "fake-gemini", "gemini", "GEMINI_API_KEY", base_url="base_url", drop=("GEMINI_", "GOOGLE_")),
    Agent("kilo", "fake-kilo", "openai", "OPENAI_API_KEY", drop=("KILO_", "KILOCODE_", "OPENCODE_")),
    Agent("kimi", "fake-kimi", "openai", "OPENAI_API_KEY", drop=("KIMI_", "MOONSHOT_")),
    Agent("opencode", "fake-opencode", "openai", "OPENAI_API_KEY", drop=("OPENCODE_",)),
    Agent("qwen", "fake-qwen", "openai", "OPENAI_API_KEY", drop=("QWEN_", "DASHSCOPE_", "BAILIAN_")),
    Agent("vibe", "fake-vibe", "openai", "OPENAI_API_KEY", drop=("MISTRAL_", "VIBE_")),
)}
CELLS = ("gsm8k:local", "gsm8k:docker", "humaneval:local", "humaneval:docker", "harbor:docker")


@attrs.frozen
class Cell:
    agent: str
    bench: str
    backend: str
    seconds: list[float]  # wall time of each run's `nullius run`
    outcome: str  # "trials=3 passed=0 failed=3 errored=0", or what went wrong
    problems: list[str]

    @property
    def per_unit(self) -> float:
        return statistics.median(self.seconds) / 3


def home_env(agent: Agent, root: Path, standard_dir: Path) -> dict[str, str]:
    env = isolated_env(root, standard_dir=standard_dir)
    for name in [k for k in env if k.startswith(("OPENAI_", "ANTHROPIC_", "GEMINI_", *agent.drop))]:
        del env[name]
    env[agent.key_env] = agent.key  # the relay's, for the provider; never the agent's
    return env


def run_args(agent: Agent, fake, bench: str, backend: str, root: Path, job: str) -> list[str]:
    where = ["--unsandboxed"] if backend == "local" else ["--backend", backend]
    dataset: list[str] = []
    if bench == "harbor":
        chosen = root / "harbor-tasks"
        if not chosen.exists():
            for name in HARBOR_CHOSEN:
                shutil.copytree(HARBOR_TASKS / name, chosen / name)
        dataset = ["--dataset", str(chosen)]
    return [str(NULLIUS), "run", bench, agent.name, *dataset, *where, "--limit", "3", "--job-name", job,
            "--model", agent.model, "--provider", agent.provider, "--base-url", getattr(fake, agent.base_url)]


def check_job(agent: Agent, job: Path, stderr: str) -> tuple[str, list[str]]:
    """The run's summary line and what a cell must not show."""
    found = SUMMARY.findall(stderr)
    if not found:
        return "no summary", [stderr[-1500:]]
    outcome = found[-1]  # trials=3 passed=0 failed=3 errored=0 cancelled=0, or scored=3 in place of passed and failed
    counts = dict(part.split("=") for part in outcome.split())
    problems = []
    ended = int(counts.get("scored", 0)) + int(counts.get("passed", 0)) + int(counts.get("failed", 0))
    if counts["trials"] != "3" or ended != 3:
        problems.append(f"expected 3 trials scored, none errored or cancelled: {outcome}\n{stderr[-1500:]}")
    for result in job.glob("*/result.json"):
        calls_file = result.parent / "agent" / "calls.jsonl"
        calls = [json.loads(line) for line in calls_file.read_text().splitlines()] if calls_file.is_file() else []
        if not calls or any(c["model_sent"] != agent.model for c in calls):
            problems.append(f"{result.parent.name}: its model calls did not all go through the relay as {agent.model}")
    leaked = files_holding(job, agent.key.encode())
    if leaked:
        problems.append(f"the key is in {leaked}")
    return outcome, problems


def run_agent(agent: Agent, cells: list[str], runs: int, work: Path, standard_dir: Path) -> list[Cell]:
    root = work / agent.name
    root.mkdir(parents=True, exist_ok=True)
    env = home_env(agent, root, standard_dir)
    measure([str(NULLIUS), "data", "add", "gsm8k/test", str(GSM8K_SEED)], root, env)
    out = []
    with running_fake_model(agent.player) as fake:
        for cell in cells:
            bench, backend = cell.split(":")
            seconds, outcome, problems = [], "", []
            for i in range(runs):
                job = f"{bench}-{backend}-{i}"
                done = measure(run_args(agent, fake, bench, backend, root, job), root, env)
                seconds.append(done["wall_s"])
                outcome, found = check_job(agent, Path(env["NULLIUS_JOBS_DIR"]) / job, done["stderr"])
                problems += found
                if found:
                    break
            out.append(Cell(agent.name, bench, backend, seconds, outcome, problems))
            print(f"{agent.name:11} {cell:17} {outcome:52} {statistics.median(seconds) / 3:6.1f} s/unit"
                  + ("  FAILED" if problems else ""), flush=True)
    return out


def table(results: list[Cell], cells: list[str]) -> str:
    """Seconds per unit by agent and cell, and the ratio to the reference agent in the same cell."""
    by = {(c.agent, f"{c.bench}:{c.backend}"): c for c in results}
    rows = ["| agent | " + " | ".join(cells) + " |", "|---|" + "---:|" * len(cells)]
    for agent in dict.fromkeys(c.agent for c in results):
        parts = []
        for cell in cells:
            mine, ref = by.get((agent, cell)), by.get(("reference", cell))
            if mine is None:
                parts.append("")
            elif mine.problems:
                parts.append("FAILED")
            else:
                ratio = f" ({mine.per_unit / ref.per_unit:.1f}x)" if ref and not ref.problems and agent != "reference" else ""
                parts.append(f"{mine.per_unit:.1f}{ratio}")
        rows.append(f"| {agent} | " + " | ".join(parts) + " |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default=",".join(AGENTS), help="comma-separated, from: " + ", ".join(AGENTS))
    parser.add_argument("--cells", default=",".join(CELLS), help="BENCH:BACKEND, comma-separated")
    parser.add_argument("--runs", type=int, default=1, help="runs of each cell (the median is printed)")
    parser.add_argument("--standard-dir", type=Path, default=Path.home() / ".cache" / "nullius-bench" / "standard",
                        help="where the agents and the kits' environments are installed, once")
    parser.add_argument("--json", type=Path, help="write every cell's figures here")
    args = parser.parse_args()
    agents, cells = args.agents.split(","), args.cells.split(",")
    unknown = [a for a in agents if a not in AGENTS] + [c for c in cells if c not in CELLS]
    if unknown:
        parser.error(f"unknown: {', '.join(unknown)}")
    if not GSM8K_SEED.is_file():
        parser.error(f"the offline seed of GSM8K is missing: {GSM8K_SEED}")
    if "reference" in agents:  # first, so every other agent's ratio has its cell to compare with
        agents = ["reference", *[a for a in agents if a != "reference"]]
    args.standard_dir.mkdir(parents=True, exist_ok=True)
    results: list[Cell] = []
    with tempfile.TemporaryDirectory(prefix="agents-matrix-") as work:
        for name in agents:
            results += run_agent(AGENTS[name], cells, args.runs, Path(work), args.standard_dir)
    print("\nseconds per unit (median of --runs), and the ratio to the reference agent's in the same cell\n")
    print(table(results, cells))
    failed = [c for c in results if c.problems]
    for c in failed:
        print(f"\n{c.agent} {c.bench}:{c.backend} FAILED:\n" + "\n".join(c.problems), file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps([attrs.asdict(c) for c in results], indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
