"""The adversarial battery (issue 14): every attack tried as a hostile miner would, against the real
sandbox, verified proxy, judge and submission gate, and how many of them the arena held.

    python -m benchmarks.adversarial [--family judge_answers --family proxy_budgets ...]

The battery is the adversarial suite itself (``tests/adversarial``, one file per attack family, run by
CI): each test case is one attack with the promise its defence keeps, so this count and the regression
tests cannot drift apart. A case is *held* when its test passes (setup, call and teardown); a case that
fails, errors or is skipped is *not held* and named. Families, by the issue's items:

- ``unverified_answers`` (1): a ReAct agent appending tabulated answers, through the sandbox with the
  scripted model: no success, ``unverified_answer``, flagged in store and dump, never agentic or trained on;
- ``forged_evidence`` (2): an agent feeding its model forged titles and prices is judged below the honest one;
- ``judge_answers`` (3): answers with two verdicts are unparseable, retried, then left to the offline
  rules; a model far above the offline rules is capped one gate above;
- ``proxy_budgets`` (4): float, string, boolean and over-cap ``max_tokens``, ``n``/``best_of`` > 1, a
  hundred parallel calls against a token budget, calls in flight per attempt;
- ``submission_gate`` (5): a second file committed in the block of a rejected or an accepted one;
  repeated uploads; verdicts of the old table layout;
- ``sandbox_uids`` (6): a fork bomb in one runner process beside an honest run in another;
- ``static_analysis`` (7): escape hatches and answer ids spelled at run time; huge folds; the bundled
  agents and the demo table cheater still pass;
- ``sandbox_proc`` (8): pid 1's command line and signals from the agent;
- ``table_cheater``: the masked lookup table scores on public problems and 0 on a freshly generated suite;
- ``answer_oracles``: the problem an agent sees cannot confirm a guessed answer;
- ``submission_load`` (issue 22, 5): 200 concurrent signed POSTs (also while another writer holds the
  SQLite database for 8 s) get no 5xx; floods of unsigned and unregistered POSTs are answered at once; a
  miner whose clock is 20 s off is accepted and its replay refused;
- ``sandbox_host_paths`` (issue 22, 6): an agent reading pid 1's and its own command line and
  environment, mounts, mountinfo, maps, cwd, ``sys.path`` and ``__file__`` finds no host virtualenv,
  interpreter or repository path (namespace; docker where an engine runs);
- ``copy_farm`` (issue 22): three hotkeys upload one agent verbatim, renamed and reformatted (also before
  the original, in its block), or padded with statements: refused as copies, none races, the taper
  goes to honest challengers; a near copy brought under the code threshold (issue 43) is refused by
  behaviour once the original, re-run on its qualifying problems, acts alike;
- ``tie_grinding`` (issue 22): hotkeys ground to sort first, or committed earlier, do not win equal race
  scores: the tie breaks on a hash of the race seed and the hotkey, in the race and the weights;
- ``echo_judge_bait`` (issue 22, 4): a parser making one call that has the model restate the parser's
  comparison of verified ids and prices earns no reasoning credit (0.1, not 0.9), and an LLM judge obeying
  an injection gains no gate above the offline verdict on it;
- ``echo_tool_calls`` (issue 22, 4): code that has the model repeat each tool call before running it is
  never ``agentic``, its echoed completions counted in the store and the dump;
- ``qualifying_table`` (issue 22, 1): a table of every problem computable before the upload (bank and
  every suite from a public seed), masked, viewing each answer first: it fails qualifying;
- ``ratchet_replay`` (issue 22, 2): the attack log replayed (a table winner reigning), an honest ReAct
  challenger still qualifies: the bar is the winner's score on the challenger's own problems;
- ``outage_reroll`` (issue 43, 2): an agent that keeps slow calls in flight after answering and makes one
  more (the provider answers it and the probe a 503), or that drops its answer and crashes the provider
  when unsure: every problem is scored, the failures counted (no gain over the honest agent);
- ``qualifying_redraw`` (issue 43, 6): the same file hash committed and uploaded again after a failed
  qualifying gets the problems of its first commitment, never a new draw (another file gets its own);
  committing, reading the next block and recommitting a changed file without uploading gets no draw
  known at the upload (the draw follows the upload window), and an upload after its window is refused;
- ``bank_style`` (issue 40): over 200 drawn bank prompts per category, none gives the catalog's service
  strings or asks for a line per product, few ask to count the items or name the voucher, every shop
  prompt asks for a shop, and an answer copying the prompt's fact wording is refused;
- ``bank_timing`` (issue 43, 7): at a tempo of 100 blocks, a bank sealed to a round before its race slot
  is refused, and no commitment made once the bank's round is emitted enters its race;
- ``sandbox_host_paths`` (issue 43, 7): no bind mount of the namespace sandbox shows a host temporary
  path (the run's workspace, the proxy's socket directory) as its source in ``mountinfo``;
- ``judge_stays_on`` (issue 43, 5): a baited two-verdict answer fails its calls; the next is LLM-judged;
- ``site_leaks`` (issue 43, 7): ``/scores`` withholds a running race's figures; a huge ``page`` gets 422;
- ``decided_by_code`` (issue 43, 1): code that words each call for the model to emit and has it say the
  code's comparison in its own words, code that shows the model only the hits it picked, restate and
  repeat-the-call: every such request is steered, never ``agentic``, quality at most 0.3; the honest
  ReAct agent run the same way keeps ``agentic``;
- ``run_starvation`` (issue 43, 4): a run keeping four long calls in flight on a provider of limited
  capacity beside a ReAct run: the ReAct run scores what it scores alone, no call of it failed.

The sample world is the tests' 3,000-product one (built in a temporary directory per run). One line per
family goes to stderr; the last line printed is one JSON object: ``{"cases", "held", "not_held",
"skipped", "families": {family: {"cases", "held", "not_held": [test ids], "skipped": ["test id: why"]}},
"seconds"}``. A case skipped because what it needs cannot run here (a docker engine) is counted as
skipped with its reason, neither held nor not held.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Literal

import orjson
import pytest

BATTERY = Path(__file__).resolve().parents[1] / "tests" / "adversarial"


Outcome = Literal["held", "not_held", "skipped"]


class _Outcomes:
    """A pytest plugin keeping, per test id, whether every phase of it passed, or why it was skipped."""

    def __init__(self) -> None:
        self.outcomes: dict[str, Outcome] = {}
        self.skip_reasons: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped:
            self.outcomes[report.nodeid] = "skipped"
            longrepr = report.longrepr
            self.skip_reasons[report.nodeid] = str(longrepr[2] if isinstance(longrepr, tuple) else longrepr)
        elif self.outcomes.get(report.nodeid) != "skipped":
            held = self.outcomes.get(report.nodeid, "held") == "held" and report.passed
            self.outcomes[report.nodeid] = "held" if held else "not_held"


def _family(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    return Path(module).stem.removeprefix("test_")


def summarize(outcomes: dict[str, Outcome], skip_reasons: dict[str, str] | None = None) -> dict[str, Any]:
    """The battery's figures from each case's outcome. A case skipped (no docker engine here, say) is
    neither held nor not held: it is listed with its reason, so a skip never passes for a defence."""
    reasons = skip_reasons or {}
    families: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"cases": 0, "held": 0, "not_held": [], "skipped": []})
    for nodeid, outcome in sorted(outcomes.items()):
        family = families[_family(nodeid)]
        family["cases"] += 1
        family["held"] += outcome == "held"
        name = nodeid.split("::", 1)[1]
        if outcome == "not_held":
            family["not_held"].append(name)
        elif outcome == "skipped":
            family["skipped"].append(f"{name}: {reasons.get(nodeid, 'skipped')}")
    counts = {kind: sum(o == kind for o in outcomes.values()) for kind in ("held", "not_held", "skipped")}
    return {"cases": len(outcomes), **counts, "families": dict(sorted(families.items()))}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", action="append", default=[],
                        help="run only this family (repeatable), e.g. proxy_budgets")
    args = parser.parse_args(argv)
    targets = [str(BATTERY / f"test_{f}.py") for f in args.family] or [str(BATTERY)]
    outcomes = _Outcomes()
    started = time.monotonic()
    pytest.main([*targets, "-q", "-p", "no:cacheprovider", "--no-header", "-o", "addopts="],
                plugins=[outcomes])
    result = {**summarize(outcomes.outcomes, outcomes.skip_reasons),
              "seconds": round(time.monotonic() - started, 1)}
    for name, family in result["families"].items():
        missed = f", not held: {', '.join(family['not_held'])}" if family["not_held"] else ""
        skipped = f", skipped: {'; '.join(family['skipped'])}" if family["skipped"] else ""
        print(f"{name}: {family['held']}/{family['cases']} held{missed}{skipped}", file=sys.stderr)
    print(orjson.dumps(result).decode())
    return result


if __name__ == "__main__":
    main()
