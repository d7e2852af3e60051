"""Variants of an agent (`nullius run BENCH --variant DIR`, `--all-variants DIR...`): real runs of the reference agent on GSM8K.

The model is the scripted fake model (the one double allowed); the relay,
the agent's process and the driver are real. One --all-variants run of three
variants (--limit 2) serves most tests: what each trial's model request held,
what each job recorded, the scoped variant's skipped units, the table after it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from nullius_core.testing import isolated_env, run_cli
from nullius_core.testing.fake_model import running_fake_model
from nullius_core.variants import read_variant
from nullius_core.variants.stage import stage
from nullius_core.definitions.variant_places import InstructionsPlace, SkillsPlace, VariantPlaces
from nullius_bench_gsm8k.plugin import TEST_SPLIT

PLAYER = "nullius_agent_reference.player"
KEY = "sk-upstream-held-by-the-relay-0123456789"
TERSE = "TERSE-MARKER: answer with the number alone."
SKILLFUL = "SKILLFUL-MARKER: use the arithmetic skill."


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def skill_repo(root: Path) -> tuple[Path, str]:
    """A real git repository holding a skill; its first commit is the ref, its later commit changes the skill."""
    repo = root / "skills-repo"
    _write(repo, {"carry/SKILL.md": "---\nname: carry\ndescription: carry the tens, as of the ref\n---\nCarry.\n",
                  "carry/references/tens.md": "tens at the ref\n"})
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "skill")
    ref = _git(repo, "rev-parse", "HEAD")
    _write(repo, {"carry/SKILL.md": "---\nname: carry\ndescription: CHANGED after the ref\n---\n", "carry/references/tens.md": "changed\n"})
    _git(repo, "commit", "-qam", "later")
    return repo, ref


def variants(root: Path) -> Path:
    """Three variants of the reference agent: terse (effort low), skillful (skills, one by git ref), scoped (to unit u0001)."""
    folder = root / "variants"
    repo, ref = skill_repo(root)
    _write(folder / "terse", {"variant.toml": 'agent = "reference"\nmodel = "fake-model"\nreasoning_effort = "low"\n',
                              "AGENTS.md": TERSE + "\n"})
    _write(folder / "skillful", {
        "variant.toml": f'agent = "reference"\nmodel = "fake-model"\n\n[[skill]]\npath = "{repo}/carry"\nref = "{ref}"\n',
        "AGENTS.md": SKILLFUL + "\n",
        "skills/arith/SKILL.md": "---\nname: arith\ndescription: add and subtract\n---\nAdd.\n",
        "skills/arith/references/table.md": "1 + 1 = 2\n",
    })
    _write(folder / "scoped", {"variant.toml": 'agent = "reference"\nmodel = "fake-model"\ntasks = ["u0001"]\n', "AGENTS.md": "SCOPED\n"})
    return folder


def model_args(fake) -> list[str]:
    return ["--provider", "openai-compatible", "--base-url", fake.openai_base_url, "--unsandboxed"]


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    root = tmp_path_factory.mktemp("variants")
    env = {**isolated_env(root, standard_dir=nullius_installs), "OPENAI_COMPATIBLE_API_KEY": KEY}
    with running_fake_model(f"{PLAYER}:respond") as fake:
        fake.use({"default": {"text": "#### 18"}})
        yield env, fake, root


@pytest.fixture(scope="module")
def all_run(world):
    env, fake, root = world
    folder = variants(root)
    result = run_cli(["run", "gsm8k", "--all-variants", str(folder), *model_args(fake), "--limit", "2", "--job-name", "v"], env)
    return env, root, folder, result, Path(env["NULLIUS_JOBS_DIR"])


def _requests(trial: Path) -> list[dict]:
    return [json.loads(line)["request"] for line in (trial / ".work" / "relay" / "bodies.jsonl").read_text().splitlines()]


def _system(trial: Path) -> str:
    return _requests(trial)[0]["messages"][0]["content"]


def test_each_variant_runs_as_its_own_job_and_its_model_receives_its_own_instructions(all_run):
    env, root, folder, result, jobs = all_run
    assert result.code == 0, result.output
    for name, marker, other in (("terse", TERSE, SKILLFUL), ("skillful", SKILLFUL, TERSE)):
        trials = sorted(p.parent for p in (jobs / f"v__{name}").glob("u*/result.json"))
        assert [t.name for t in trials] == ["u0000", "u0001"]
        for trial in trials:
            system = _system(trial)  # the request the relay recorded, as the agent sent it
            assert marker in system and other not in system and "SCOPED" not in system
            assert json.loads((trial / "result.json").read_text()).get("exception_info") is None
    calls = [json.loads(line) for line in (jobs / "v__terse" / "u0000" / "agent" / "calls.jsonl").read_text().splitlines()]
    assert {c["request"]["reasoning_effort"] for c in calls} == {"low"}  # the effort reached the agent, which sent it
    calls = [json.loads(line) for line in (jobs / "v__skillful" / "u0000" / "agent" / "calls.jsonl").read_text().splitlines()]
    assert {c["request"]["reasoning_effort"] for c in calls} == {None}


def test_each_trial_records_the_variant_name_digest_and_only_an_explicit_effort(all_run):
    env, root, folder, result, jobs = all_run
    digests = {}
    for name, effort in (("terse", "low"), ("skillful", "")):
        job = json.loads((jobs / f"v__{name}" / "config.json").read_text())["standard"]
        assert job["variant"]["name"] == name and len(job["variant"]["digest"]) == 64
        assert job["reasoning_effort"] == effort and job["participant"] == "reference" and job["model"] == "fake-model"
        digests[name] = job["variant"]["digest"]
        trial_config = json.loads((jobs / f"v__{name}" / "u0001" / "config.json").read_text())["standard"]
        assert trial_config["variant"]["digest"] == digests[name] and trial_config["reasoning_effort"] == effort
        own = json.loads((jobs / f"v__{name}" / "u0001" / "result.json").read_text())["standard"]
        assert own["variant"] == {"name": name, "digest": digests[name]} and own["reasoning_effort"] == effort
        summary = json.loads((jobs / f"v__{name}" / "result.json").read_text())["standard"]
        assert summary["variant"]["digest"] == digests[name] and summary["reasoning_effort"] == effort
    assert digests["terse"] != digests["skillful"]


def test_a_changed_file_changes_the_digest_and_line_ends_do_not(tmp_path):
    folder = _write(tmp_path / "v", {"variant.toml": 'agent = "reference"\nmodel = "m"\n', "AGENTS.md": "one\n"})
    places = VariantPlaces(instructions=InstructionsPlace(file="AGENTS.md"), skills=SkillsPlace(path=".agents/skills"))
    first = stage(read_variant(folder), places, tmp_path / "s1").digest
    (folder / "AGENTS.md").write_text("one\r\n")
    assert stage(read_variant(folder), places, tmp_path / "s2").digest == first  # normalized: the same text
    (folder / "AGENTS.md").write_text("two\n")
    changed = stage(read_variant(folder), places, tmp_path / "s3").digest
    assert changed != first
    (folder / "AGENTS.md").write_text("one\n")
    (folder / "variant.toml").write_text('agent = "reference"\nmodel = "m"\nreasoning_effort = "high"\n')
    assert stage(read_variant(folder), places, tmp_path / "s4").digest not in (first, changed)


def test_skills_are_staged_whole_at_the_agents_skills_place_one_read_at_its_git_ref(all_run):
    env, root, folder, result, jobs = all_run
    workspace = jobs / "v__skillful" / "u0000" / ".work" / "workspace"
    skills = workspace / ".agents" / "skills"
    assert (skills / "arith" / "references" / "table.md").read_text() == "1 + 1 = 2\n"
    assert "as of the ref" in (skills / "carry" / "SKILL.md").read_text()  # the commit named, not the repository's HEAD
    assert (skills / "carry" / "references" / "tens.md").read_text() == "tens at the ref\n"
    assert (workspace / "AGENTS.md").read_text().strip() == SKILLFUL
    system = _system(jobs / "v__skillful" / "u0000")
    assert "- arith: add and subtract" in system and "- carry: carry the tens, as of the ref" in system
    files = json.loads((jobs / "v__skillful" / "config.json").read_text())["standard"]["variant"]["files"]
    assert "workspace/.agents/skills/carry/references/tens.md" in files and "workspace/AGENTS.md" in files
    # in the setup's commit: the agent's own changes do not list the variant's files
    status = subprocess.run(["git", "status", "--porcelain"], cwd=workspace, capture_output=True, text=True).stdout
    assert ".agents" not in status and "AGENTS.md" not in status


def test_a_scoped_variant_runs_its_tasks_alone_and_reports_the_others_skipped(all_run):
    env, root, folder, result, jobs = all_run
    job = jobs / "v__scoped"
    assert sorted(p.parent.name for p in job.glob("u*/result.json")) == ["u0001"]
    summary = json.loads((job / "result.json").read_text())["standard"]
    units = len(TEST_SPLIT.read_text().splitlines())
    assert summary["skipped"]["units"] == units - 1 and "u0000" in summary["skipped"]["names"]
    assert summary["trials"] == 1 and not summary.get("errors")
    assert f"{units - 1} units outside the variant's scope" in result.stderr


def test_after_the_last_job_a_table_per_configuration_with_its_std(all_run):
    env, root, folder, result, jobs = all_run
    table = result.stderr[result.stderr.index("configurations ("):]
    lines = [line for line in table.splitlines()[1:] if line.strip()]
    assert lines[0].split()[:4] == ["variant", "agent", "model", "effort"]
    rows = {line.split(" (")[0]: line for line in lines[1:]}
    assert set(rows) == {"terse", "skillful", "scoped"}
    assert "±" in rows["terse"] and "±" not in rows["scoped"]  # two trials: a std; one trial: a bare value
    assert "(not set)" in rows["skillful"] and " low " in rows["terse"]


def test_jobs_of_different_variants_are_never_merged(all_run):
    env, root, folder, result, jobs = all_run
    for force in ([], ["--force"]):
        merged = run_cli(["merge", str(jobs / "v__terse"), str(jobs / "v__skillful"), "-o", str(root / f"merged{len(force)}"), *force], env, in_process=True)
        assert merged.code == 2 and "another configuration, never merged" in merged.stderr, merged.output
        assert not (root / f"merged{len(force)}").exists()


def test_one_variant_with_none_of_its_tasks_in_the_run_is_refused(world):
    env, fake, root = world
    folder = _write(root / "nowhere", {"variant.toml": 'agent = "reference"\nmodel = "fake-model"\ntasks = ["no-such-unit"]\n'})
    result = run_cli(["run", "gsm8k", "--variant", str(folder), *model_args(fake), "--job-name", "nowhere"], env)
    assert result.code == 2, result.output
    assert "run refused: the variant nowhere is scoped to tasks no-such-unit" in result.stderr and "Traceback" not in result.output
    assert not (Path(env["NULLIUS_JOBS_DIR"]) / "nowhere").exists()


@pytest.mark.parametrize("text, expected", [
    ('agent = "reference"\n', "$.model: required key missing"),
    ('agent = "reference"\nmodel = "m"\ntasks = "u0001"\n', "$.tasks: expected a list"),
    ('agent = "reference"\nmodel = "m"\n[[skill]]\nref = "main"\n', "$.skill[0].path: required key missing"),
    ('agent = "reference"\nmodel = m\n', "$: expected TOML, found a syntax error"),
    ('agent = "reference"\nmodel = "m"\ncolour = "red"\n', "colour"),
])
def test_a_malformed_variant_toml_names_file_field_and_expectation(world, text, expected):
    env, fake, root = world
    folder = _write(root / "bad", {"variant.toml": text})
    result = run_cli(["run", "gsm8k", "--variant", str(folder), *model_args(fake)], env)
    assert result.code == 2 and "Traceback" not in result.output, result.output
    assert f"{folder / 'variant.toml'}: " in result.stderr and expected in result.stderr, result.stderr


def test_a_variant_for_an_agent_without_a_place_for_its_files_or_effort_is_refused(world):
    env, fake, root = world
    vibe = _write(root / "vibe-v", {"variant.toml": 'agent = "vibe"\nmodel = "fake-model"\n', "AGENTS.md": "x\n", "skills/s/SKILL.md": "s\n"})
    result = run_cli(["run", "gsm8k", "--variant", str(vibe), *model_args(fake)], env)
    assert result.code == 2 and "Traceback" not in result.output, result.output
    assert "vibe-v: it holds AGENTS.md, but vibe declares no instruction file (agent.json variant.instructions)" in result.stderr
    assert "it holds skills, but vibe declares no skills folder (agent.json variant.skills)" in result.stderr
    wrong = _write(root / "wrong-file", {"variant.toml": 'agent = "gemini"\nmodel = "fake-model"\nreasoning_effort = "high"\n',
                                         "CLAUDE.md": "x\n"})
    result = run_cli(["run", "gsm8k", "--variant", str(wrong), *model_args(fake)], env)
    assert result.code == 2, result.output
    assert "it holds CLAUDE.md, but gemini reads GEMINI.md" in result.stderr
    assert "reasoning effort 'high' cannot reach gemini: it declares no way to take one" in result.stderr


def test_an_effort_alone_reaches_the_agent_its_way_and_one_it_does_not_allow_is_refused(world):
    env, fake, root = world
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    result = run_cli(["run", "gsm8k", "reference", "--model", "fake-model", *model_args(fake), "--limit", "1", "--effort", "high",
                      "--job-name", "effort-high"], env)
    assert result.code == 0, result.output
    calls = [json.loads(line) for line in (jobs / "effort-high" / "u0000" / "agent" / "calls.jsonl").read_text().splitlines()]
    assert {c["request"]["reasoning_effort"] for c in calls} == {"high"}
    std = json.loads((jobs / "effort-high" / "config.json").read_text())["standard"]
    assert std["reasoning_effort"] == "high" and std["variant"] is None and std["agent"]["options"]["reasoning_effort"] == "high"
    refused = run_cli(["run", "gsm8k", "reference", "--model", "fake-model", *model_args(fake), "--effort", "extreme"], env)
    assert refused.code == 2 and "option 'reasoning_effort' of reference does not allow 'extreme'" in refused.stderr, refused.output
    both = run_cli(["run", "gsm8k", "reference", "--model", "fake-model", *model_args(fake), "--effort", "low", "--option",
                    "reasoning_effort=high"], env)
    assert both.code == 2 and "--option reasoning_effort=high and the reasoning effort 'low' disagree" in both.stderr, both.output
    plain = json.loads((jobs / "effort-high" / "u0000" / "result.json").read_text())
    assert plain["standard"]["reasoning_effort"] == "high"


def test_a_resumed_variant_job_is_held_to_its_digest(world):
    env, fake, root = world
    folder = _write(root / "resumable", {"variant.toml": 'agent = "reference"\nmodel = "fake-model"\n', "AGENTS.md": "first\n"})
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    assert run_cli(["run", "gsm8k", "--variant", str(folder), *model_args(fake), "--limit", "1", "--job-name", "resumable"], env).code == 0
    again = run_cli(["run", "--resume", str(jobs / "resumable"), *model_args(fake)], env)
    assert again.code == 0, again.output  # the same variant: the job stands as it is
    (folder / "AGENTS.md").write_text("changed\n")
    changed = run_cli(["run", "--resume", str(jobs / "resumable"), *model_args(fake)], env)
    assert changed.code == 2 and "a changed variant is another configuration" in changed.stderr, changed.output


def test_files_go_under_the_root_the_definition_names_the_home_too(tmp_path):
    folder = _write(tmp_path / "v", {"variant.toml": 'agent = "codex"\nmodel = "m"\n', "AGENTS.md": "home rules\n",
                                     "skills/s/SKILL.md": "---\nname: s\n---\n", "skills/s/references/r.md": "r\n"})
    places = VariantPlaces(instructions=InstructionsPlace(file="AGENTS.md", root="home", path=".codex/AGENTS.md"),
                           skills=SkillsPlace(path=".agents/skills"))
    staged = stage(read_variant(folder), places, tmp_path / "scratch")
    assert sorted(staged.files) == ["home/.codex/AGENTS.md", "workspace/.agents/skills/s/SKILL.md", "workspace/.agents/skills/s/references/r.md"]
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    staged.write_into({"workspace": workspace, "home": home})
    assert (home / ".codex" / "AGENTS.md").read_text() == "home rules\n" and not (workspace / "AGENTS.md").exists()
    assert (workspace / ".agents" / "skills" / "s" / "references" / "r.md").read_text() == "r\n"
