"""How certain is a call once its name can be read? (issue 21: streaming arguments)

    python benchmarks/early_names.py                    # tests/corpus, chunkings 1 to 3
    python benchmarks/early_names.py --seeds 1,2,3,4,5 --max-len 20000
    python benchmarks/early_names.py --shared           # + ../shared/corpus captures, read in place

An OpenAI stream cannot take anything back: a call that gets an index, an id and a name
must be a call of the final result, at that index, with that name and id. Streaming its
arguments as the model writes them means announcing it once its name is readable. This
measures how often that would be wrong, with parse()'s present semantics.

Each reply is cut into the replay backend's pieces (1-12 characters, tests/serve/
replay_backend.py, one chunking per seed). After each piece, parse() of the text so far
(what the reply would give if it ended there: the most any reader can know then) is
looked at. Call i is "named" at the first piece after which that parse has a call i
whose name is followed by a further character (so it cannot grow). Then, against
parse() of the whole reply:

  kept     the final call i has that name and starts there (the same id): announcing was right;
  moved    same name at i, another start: another id (mostly a call inside a list or a
           section, read while cut as starting with its region; a reader that knows the
           format could tell the right start, so these are not all failures);
  renamed  the final call i has another name (a name read half, a later "name" key);
  gone     the final reply has no call i: the region failed into prose and an error after
           its name (a broken block, arguments that are no object, nested too deeply, ...)
           or was refused.

`ahead` is, for kept calls, the share of the call's text still to come when it was named:
what streaming its arguments would gain. Quadratic (a parse per piece): for measuring only.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "tests" / "serve")]

import toolgram  # noqa: E402
from conftest import corpus_cases  # noqa: E402
from replay_backend import pieces  # noqa: E402

SHARED = ROOT.parent / "shared" / "corpus"
OUTCOMES = ("kept", "moved", "renamed", "gone")


def replies(max_len: int, shared: bool):
    """(group, label, raw, tools, options) for each reply measured."""
    for case in corpus_cases():
        if len(case.raw) <= max_len:
            group = "real" if case.id.split("/")[1].startswith(("smollm2_", "reference", "seed_")) else "constructed"
            opts = {"formats": case.formats, "in_think": case.in_think, "truncated": case.truncated}
            yield group, case.id.split("/")[0], case.raw, case.tools, opts
    if shared and SHARED.is_dir():
        for path in sorted(SHARED.glob("*.jsonl")):
            if path.name.startswith("smollm2_"):
                continue  # (in tests/corpus already)
            for line in path.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                raw = record.get("raw")
                if isinstance(raw, str) and len(raw) <= max_len:
                    yield "shared", path.stem, raw, None, {}


def measure(raw: str, tools, opts: dict, seed: int) -> list[tuple[str, float]]:
    """(outcome, ahead) for each call named while `raw` streams in pieces of `seed`."""
    final = toolgram.parse(raw, tools, **opts).calls
    named: dict[int, tuple[str, int, int]] = {}
    pos = 0
    for piece in pieces(raw, seed):
        pos += len(piece)
        for i, call in enumerate(toolgram.parse(raw[:pos], tools, **opts).calls):
            if i in named:
                continue
            m = re.compile(re.escape(call.name) + r"(?![\w.-])").search(raw, call.span[0], pos)
            if m is not None and m.end() < pos:
                named[i] = (call.name, call.span[0], pos)
    out = []
    for i, (name, start, at) in sorted(named.items()):
        if i >= len(final):
            out.append(("gone", 0.0))
        elif final[i].name != name:
            out.append(("renamed", 0.0))
        elif final[i].span[0] != start:
            out.append(("moved", 0.0))
        else:
            a, b = final[i].span
            out.append(("kept", max(0, b - at) / max(1, b - a)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--max-len", type=int, default=20_000, help="skip longer replies (a parse per piece)")
    ap.add_argument("--shared", action="store_true", help="also ../shared/corpus's captures (read in place)")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    t0 = time.process_time()
    rows: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    ahead: dict[str, list[float]] = collections.defaultdict(list)
    for group, label, raw, tools, opts in replies(args.max_len, args.shared):
        for seed in seeds:
            for outcome, share in measure(raw, tools, opts, seed):
                rows[group, label][outcome] += 1
                if outcome == "kept":
                    ahead[group].append(share)
    print(f"{'group':<12}{'format':<24}" + "".join(f"{o:>9}" for o in OUTCOMES) + f"{'wrong %':>9}")
    totals: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for (group, label), row in sorted(rows.items()):
        totals[group].update(row)
        print(f"{group:<12}{label:<24}" + "".join(f"{row[o]:>9}" for o in OUTCOMES) + f"{_wrong(row):>9.1f}")
    for group, row in sorted(totals.items()):
        shares = sorted(ahead[group])
        median = shares[len(shares) // 2] if shares else 0.0
        print(
            f"{group:<12}{'ALL':<24}" + "".join(f"{row[o]:>9}" for o in OUTCOMES) + f"{_wrong(row):>9.1f}"
            f"   (renamed or gone: {100 * (row['renamed'] + row['gone']) / max(1, sum(row.values())):.1f} %;"
            f" kept calls named with a median {100 * median:.0f} % of their text to come)"
        )
    print(f"seeds {seeds}, replies up to {args.max_len} characters, {time.process_time() - t0:.0f} s CPU")


def _wrong(row: collections.Counter) -> float:
    return 100 * (row["moved"] + row["renamed"] + row["gone"]) / max(1, sum(row.values()))


if __name__ == "__main__":
    main()
