"""The official MCP conformance suite against the host over HTTP, serving
the conformance fixture plugins (dist/conformance): what 2025-11-25 and
2026-07-28 require, and then every scenario (pending, draft, extensions).
Known failures are listed, with their reasons, in
tests/conformance/expected-failures.yml; anything else failing, or a listed
scenario passing, fails the test."""

import re
import subprocess
from pathlib import Path

import pytest

from conftest import CONFORMANCE

TS = Path(__file__).resolve().parent / "ts"
BASELINE = Path(__file__).resolve().parent / "conformance" / "expected-failures.yml"


@pytest.fixture(scope="module")
def conformance_host(host_env, tmp_path_factory):
    from conftest import HttpHost

    host = HttpHost(CONFORMANCE, host_env)
    yield host
    host.close()


def run_suite(host, env, *args) -> str:
    cli = TS / "node_modules" / ".bin" / "conformance"
    run = subprocess.run(
        [str(cli), "server", "--url", host.url, "--expected-failures", str(BASELINE), *args],
        cwd=host_dir(), env=env, capture_output=True, text=True, timeout=1200,
    )
    summary = run.stdout[run.stdout.find("=== SUMMARY ===") :]
    print(summary)
    assert "=== SUMMARY ===" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.returncode == 0, summary + run.stderr[-3000:]
    return summary


def host_dir() -> Path:
    # The suite writes results/ into its working directory.
    path = TS / "conformance-results"
    path.mkdir(exist_ok=True)
    return path


def passed(summary: str, scenario: str) -> bool:
    return re.search(rf"✓ {re.escape(scenario)}: \d+ passed, 0 failed", summary) is not None


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_required_scenarios(conformance_host, host_env, revision):
    summary = run_suite(conformance_host, host_env, "--requirements", revision)
    for scenario in ("tools-call-simple-text", "resources-templates-read", "prompts-get-with-args",
                     "dns-rebinding-protection", "completion-complete"):
        assert passed(summary, scenario), scenario
    if revision == "2026-07-28":
        for scenario in ("server-stateless", "caching", "sep-2164-resource-not-found",
                         "http-header-validation", "http-custom-header-server-validation"):
            assert passed(summary, scenario), scenario
    else:
        for scenario in ("server-initialize", "resources-subscribe", "tools-call-with-logging",
                         "server-session-lifecycle", "tools-call-sampling", "tools-call-elicitation",
                         "elicitation-sep1034-defaults", "elicitation-sep1330-enums"):
            assert passed(summary, scenario), scenario


def passed_checks(summary: str, scenario: str) -> int:
    """How many checks of `scenario` passed (0 when any failed, or it did not run)."""
    found = re.search(rf"✓ {re.escape(scenario)}: (\d+) passed, 0 failed", summary)
    return int(found.group(1)) if found else 0


def test_every_scenario_including_pending(conformance_host, host_env):
    summary = run_suite(conformance_host, host_env, "--suite", "all")
    for scenario in ("json-schema-2020-12", "server-sse-polling", "http-header-validation"):
        assert passed(summary, scenario), scenario
    # The Skills extension (SEP-2640), served from the fixture's skills
    # folder: every check runs (none skipped for want of a skill).
    for scenario, checks in (("sep-2640-skills-enumeration", 32), ("sep-2640-skills-directory", 7),
                             ("sep-2640-skills-manifest", 6)):
        assert passed_checks(summary, scenario) >= checks, scenario
