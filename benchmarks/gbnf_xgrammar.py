"""toolgram.constrain's GBNF read by xgrammar (the grammar engine of vLLM, SGLang and
TensorRT-LLM), and the calls it must accept and refuse checked by xgrammar's own matcher.

    pip install xgrammar                  # it brings torch and transformers
    python benchmarks/gbnf_xgrammar.py [--formats hermes,lfm2]

The cases are tests/constrain/cases.json, the ones tests/test_constrain.py gives
llguidance: for every format with a canonical form, the GBNF of toolgram.constrain(tools,
format, engine="gbnf") must load (xgrammar.Grammar.from_ebnf), every list of `good` calls
written by render_call must be accepted (also after a line of prose, where the format's
region opens with a marker, and refused there with prose=False), and every `bad` call
refused. xgrammar is not among the test suite's dependencies (torch alone is hundreds of
MB), so this runs as a command.

Printed: a line per format with what failed, and a summary; exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import toolgram  # noqa: E402
from toolgram._constrain.canonical import canonical, constrainable  # noqa: E402
from toolgram.prompts import render_call  # noqa: E402

CASES = json.loads((ROOT / "tests" / "constrain" / "cases.json").read_text(encoding="utf-8"))


def _prose_before(fmt: str) -> str:
    return "Let me check that.\n" if canonical(fmt).anchor == "line" else "Let me check that. "


def check(fmt: str, xgr, accepts) -> list[str]:
    """What went wrong for fmt (empty: nothing)."""
    tools = CASES["tools"]
    problems = []
    grammars = {}
    for prose in (True, False):
        try:
            grammars[prose] = xgr.Grammar.from_ebnf(toolgram.constrain(tools, fmt, engine="gbnf", prose=prose))
        except Exception as exc:  # xgrammar's reader refused it
            return [f"not loaded (prose={prose}): {str(exc)[:200]}"]
    for calls in CASES["good"]:
        text = render_call(calls, fmt)
        if not accepts(grammars[True], text):
            problems.append(f"refused a good call: {text[:120]!r}")
        if not accepts(grammars[False], text):
            problems.append(f"refused a good call (prose=False): {text[:120]!r}")
        if canonical(fmt).start_marker:
            if not accepts(grammars[True], _prose_before(fmt) + text):
                problems.append(f"refused a good call after prose: {text[:120]!r}")
            if accepts(grammars[False], _prose_before(fmt) + text):
                problems.append(f"accepted prose with prose=False: {text[:120]!r}")
    for why, call in CASES["bad"].items():
        text = render_call([call], fmt)
        if accepts(grammars[True], text):
            problems.append(f"accepted a bad call ({why}): {text[:120]!r}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--formats", default=None, help="comma-separated (default: every format with a canonical form)")
    args = ap.parse_args()

    import xgrammar as xgr
    from xgrammar.testing import _is_grammar_accept_string as accepts

    formats = args.formats.split(",") if args.formats else constrainable()
    failed = 0
    n_good, n_bad = len(CASES["good"]), len(CASES["bad"])
    for fmt in formats:
        problems = check(fmt, xgr, accepts)
        failed += bool(problems)
        print(f"{fmt:20} {'ok' if not problems else 'FAILED'}: {n_good} good lists of calls, {n_bad} bad calls")
        for p in problems:
            print(f"    {p}")
    from importlib.metadata import version

    print(f"summary: xgrammar {version('xgrammar')}; {len(formats) - failed}/{len(formats)} formats' GBNF loaded, "
          f"accepted every good call and refused every bad one")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
