"""docs/ci.md's GitHub Actions workflow, its `freshrag` commands run as written, job by job, in a
fresh checkout each, against the fake OpenAI server: what `actions/cache` and the artifact
actions would carry between the jobs is copied, and the candidate job makes no model call. The
comment's `gh pr comment` runs as written, its `${{ }}` expressions filled in, against a
stand-in `gh` that keeps what it would post: the gate's comment body. Its other commands are
checked as written: each job installs the checkout as the README does, before its first
`freshrag` command (no network: the README's install runs in the clean-room test)."""

import os
import re
import shlex
import shutil
import subprocess
import tomllib
import xml.etree.ElementTree as ET

import yaml

from tests import ROOT
from tests.support.datasets import write_dataset
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import discerning_judge

PAGE = ROOT / "docs" / "ci.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)
OUTSIDE = ("gh pr comment ",)  # commands of the CI service, not freshrag's
GITHUB = {"github.event.pull_request.number": "7", "github.token": "gh-token"}  # ${{ }} values
EXPRESSION = re.compile(r"\$\{\{\s*([\w.]+)\s*\}\}")
# `gh` as the comment step calls it: its arguments and the body it would post, kept
STAND_IN_GH = """#!/bin/sh
printf '%s\\n' "$@" > gh-args.txt
while [ $# -gt 0 ]; do
    if [ "$1" = --body-file ]; then cp "$2" gh-posted.md; fi
    shift
done
"""


def blocks(kind, page=PAGE):
    return [body for language, body in FENCE.findall(page.read_text(encoding="utf-8"))
            if language == kind]


def workflow():
    return yaml.safe_load(next(body for body in blocks("yaml") if "actions/cache" in body))


def installed(command):
    """What a `pip install` command installs from the checkout: (the path, its extras), for
    each of its `pip install` parts that names a path; None for a part that names a package."""
    found = []
    for part in command.split("&&"):
        words = shlex.split(part)
        if words[:2] != ["pip", "install"]:
            continue
        targets = [w for w in words[2:] if not w.startswith("-") and "==" not in w]
        for target in targets:
            path, _, extras = target.partition("[")
            found.append((path, tuple(filter(None, extras.rstrip("]").split(","))))
                         if path.startswith(".") else None)
    return found


def reply(request):
    if request.get("tool_choice") not in (None, "auto"):
        return discerning_judge(request)
    town = re.search(r"Town (\d+)", str(request["messages"])).group(1)
    return {"content": f"Town {town} has {int(town) + 3} bridges."}


def checkout(root, name):
    """A fresh job's working directory: the repository's dataset and gate.toml."""
    job = root / name
    write_dataset(job / "datasets" / "gate", 6)
    rules = next(body for body in blocks("toml") if body.startswith("# gate.toml"))
    (job / "gate.toml").write_text(rules, encoding="utf-8")
    return job


def run_job(job, steps, env, store):
    """The job's steps: caches and artifacts from `store`, `freshrag` commands in bash; the exit
    status of each command, by step name."""
    statuses = {}
    for step in steps:
        uses, options = step.get("uses", ""), step.get("with", {})
        if uses.startswith(("actions/cache", "actions/download-artifact")):
            for path in options["path"].split():
                saved = store / ("artifact-" + options["name"] if "name" in options else path)
                if saved.exists():
                    (job / path).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copytree(saved, job / path) if saved.is_dir() else \
                        shutil.copy(saved, job / path)
        elif uses.startswith("actions/upload-artifact"):
            shutil.copytree(job / options["path"], store / ("artifact-" + options["name"]))
        elif step.get("run", "").startswith("freshrag "):
            done = subprocess.run(["bash", "-c", step["run"]], cwd=job, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0 or step.get("continue-on-error"), done.stderr
            statuses[step.get("name", step["run"])] = done.returncode
        elif step.get("run", "").startswith(OUTSIDE):
            statuses[step.get("name", step["run"])] = _outside(job, step, env)
        elif "run" in step:  # the install, checked by its own test
            assert step["run"].startswith("pip install "), step["run"]
    for step in steps:  # actions/cache saves its paths when the job ends
        if step.get("uses", "").startswith("actions/cache"):
            for path in step["with"]["path"].split():
                target = store / path
                shutil.rmtree(target, ignore_errors=True)
                target.parent.mkdir(parents=True, exist_ok=True)
                (shutil.copytree if (job / path).is_dir() else shutil.copy)(job / path, target)
    return statuses


def _outside(job, step, env):
    """A command of the CI service, run as written against a stand-in on the path."""
    stand_ins = job / ".stand-ins"
    stand_ins.mkdir(exist_ok=True)
    (stand_ins / "gh").write_text(STAND_IN_GH, encoding="utf-8")
    (stand_ins / "gh").chmod(0o755)
    filled = {name: EXPRESSION.sub(lambda m: GITHUB[m.group(1)], str(value))
              for name, value in step.get("env", {}).items()}
    done = subprocess.run(["bash", "-c", EXPRESSION.sub(lambda m: GITHUB[m.group(1)],
                                                        step["run"])],
                          cwd=job, env={**env, **filled,
                                        "PATH": f"{stand_ins}{os.pathsep}{env['PATH']}"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert step.get("if") == "always()"  # posted when the gate fails or refuses too
    return done.returncode


def test_each_job_installs_the_checkout_as_the_readme_does_before_running_it():
    readme = " ".join(body for body in blocks("bash", ROOT / "README.md"))
    [readme_install] = [line for line in readme.splitlines() if "pip install" in line]
    from_checkout = [found for found in installed(readme_install) if found]
    assert [path for path, _ in from_checkout] == ["."]  # the README installs the repository
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "freshrag" in project["scripts"]  # the command the jobs run comes with it
    for name, job in workflow()["jobs"].items():
        commands = [step["run"] for step in job["steps"] if "run" in step]
        installs = [i for i, command in enumerate(commands) if command.startswith("pip ")]
        runs = [i for i, command in enumerate(commands) if command.startswith("freshrag ")]
        assert len(installs) == 1 and installs[0] < runs[0], name
        [(path, extras)] = installed(commands[installs[0]])  # None: a package from the index
        assert path == "." and set(extras) <= set(project["optional-dependencies"]), name


def test_the_workflow_runs_its_commands_and_the_unchanged_candidate_passes_free(tmp_path):
    workflow_ = workflow()
    jobs = workflow_["jobs"]
    assert list(jobs) == ["baseline", "gate"] and jobs["gate"]["needs"] == "baseline"
    cached = [step["with"]["path"].split() for job in jobs.values() for step in job["steps"]
              if step.get("uses", "").startswith("actions/cache")]
    assert cached == [["results/.llm-cache.sqlite", "results/.index"]] * 2  # freshrag's paths
    store = tmp_path / "store"
    with FakeOpenAIServer(reply=reply) as server:
        env = {**os.environ, **workflow_["env"], "FRESHRAG_BASE_URL": server.base_url,
               "FRESHRAG_API_KEY": "sk-test"}
        statuses = run_job(checkout(tmp_path, "baseline"), jobs["baseline"]["steps"], env,
                           store)
        assert statuses == {"Run the baseline": 0} and server.calls > 0
        server.reset_counts()
        job = checkout(tmp_path, "gate")
        statuses = run_job(job, jobs["gate"]["steps"], env, store)
        assert statuses == {"Run the candidate": 0, "Gate": 0, "Comment": 0}
        assert server.calls == 0  # the candidate answered and graded from the cache alone
    assert "--max-cost" in str(jobs)
    assert (job / "gh-args.txt").read_text().split() == ["pr", "comment", "7", "--body-file",
                                                         "gate.md"]
    posted = (job / "gh-posted.md").read_text(encoding="utf-8")
    assert posted.startswith("## freshrag gate: passed (5 of 5 rules hold)\n")
    assert "| rule | metric | baseline | candidate | difference [95% interval] | verdict |" in posted
    suite = ET.parse(job / "gate.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("5", "0")
