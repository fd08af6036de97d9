"""Which drawn cases an implementation declines, tabulated: the evidence for its case domain.

    python -m flashcheck.devtools.declines --impl sdpa-public-cudnn --device cuda --cases 400

Draws cases as fuzzing does for a property (``--property``, default ``out_matches_reference``)
inside the implementation's features but ignoring any declared case domain, runs the
implementation on each (forward only, or with gradients for a gradient property) and prints,
for each attribute of a case (head dim, its residue mod 8, equal lengths, the lengths'
residues mod 8, dtype, layout, mode, GQA ratio, band, scale sign), the share of cases declined per
value; then the most common decline messages. A value declined always, where others are
not, is a candidate for ``flashcheck_case_domain``; one declined sometimes depends on
something else. Prints ``--json`` too, for the measurement's folder.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys

from hypothesis import HealthCheck, given, settings

from flashcheck import peers, protocol
from flashcheck.cases import sizes as case_sizes
from flashcheck.cases.compile_classes import key_of
from flashcheck.cases.domain import CaseDomain
from flashcheck.engine import property_cases
from flashcheck.engine.verdict import Outcome, decide
from flashcheck.properties import PROPERTIES

#: The compile-key attributes tabulated, read off a case as a compile key reads them
#: (:func:`flashcheck.cases.compile_classes.key_of`).
_KEY_ATTRIBUTES = ("head_dim", "dtype", "layout", "mode", "band", "gqa_ratio", "scale_sign")
_EQUAL_LENGTHS = CaseDomain(equal_lengths=True)

#: What each row of the table reads off a case.
ATTRIBUTES = {
    **{name: (lambda case, name=name: key_of(case, (name,))[0]) for name in _KEY_ATTRIBUTES},
    "head_dim % 8": lambda case: case.head_dim % 8,
    "equal lengths": lambda case: _EQUAL_LENGTHS.outside_because(case) is None,
    "seqlen_q % 8": lambda case: case.seqlen_q % 8,
    "seqlen_k % 8": lambda case: case.seqlen_k % 8,
}


def tabulate(impl, prop_name: str, device: str, count: int, sizes) -> dict:
    """``{"cases", "declined", "by_attribute": {attribute: {value: [declined, drawn]}}, "reasons"}``."""
    prop = PROPERTIES[prop_name]
    features = protocol.features_of(impl, device)
    strategy = property_cases.case_strategy(prop, features, sizes, compile_key=())
    by_attribute = {name: collections.defaultdict(lambda: [0, 0]) for name in ATTRIBUTES}
    reasons = collections.Counter()
    totals = [0, 0]

    @settings(max_examples=count, database=None, deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(case):
        verdict = decide(prop, impl, case, device=device, impl_name="probe")
        declined = verdict.outcome is Outcome.DECLINED
        totals[0] += 1
        totals[1] += declined
        for name, read in ATTRIBUTES.items():
            cell = by_attribute[name][str(read(case))]
            cell[0] += declined
            cell[1] += 1
        if declined:
            reasons[verdict.reason[:200]] += 1

    run()
    return {"cases": totals[0], "declined": totals[1],
            "by_attribute": {name: dict(values) for name, values in by_attribute.items()},
            "reasons": reasons.most_common(12)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--impl", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--property", default="out_matches_reference", choices=sorted(PROPERTIES))
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--sizes", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    impl = peers.resolve(args.impl)
    protocol.prepare(impl)
    table = tabulate(impl, args.property, args.device, args.cases, case_sizes.choose(args.sizes))
    print(f"{args.impl} on {args.device}, {args.property}: {table['declined']} of {table['cases']} declined")
    for name, values in table["by_attribute"].items():
        cells = ", ".join(f"{value}: {declined}/{drawn}" for value, (declined, drawn)
                          in sorted(values.items(), key=lambda item: str(item[0])))
        print(f"  {name}: {cells}")
    for reason, count in table["reasons"]:
        print(f"  {count} x {reason}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(table, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
