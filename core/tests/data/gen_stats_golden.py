# SPDX-License-Identifier: Apache-2.0
"""Regenerates stats_golden.jsonl: random inputs and the outputs of the reference `stats()`.

Usage: python3 gen_stats_golden.py PATH/TO/reference > stats_golden.jsonl
The reference directory (summarize_e2e_profiles.py) is needed only here, at generation time;
the Rust test reads the .jsonl alone. Non-finite inputs are written as the strings "nan",
"inf" and "-inf" (JSON has no literal for them); true/null/"text" are non-numbers the
reference drops.
"""

import json
import math
import random
import sys

sys.path.insert(0, sys.argv[1])
from summarize_e2e_profiles import stats  # noqa: E402

rng = random.Random(20261129)


def value():
    kind = rng.randrange(12)
    if kind == 0:
        return rng.randrange(-5, 6)
    if kind == 1:
        return float(rng.randrange(-5, 6))
    if kind == 2:
        return rng.choice([math.nan, math.inf, -math.inf, True, False, None, "x"])
    if kind == 3:
        return rng.lognormvariate(0, 3)
    if kind == 4:
        return rng.uniform(-1e6, 1e6)
    if kind == 5:
        return rng.randrange(-(2**63), 2**63)
    if kind == 6:
        return rng.random() * 10 ** rng.randrange(-300, 300)
    if kind == 7:
        return 1712195495406752.8 + rng.randrange(1000) * 0.25
    if kind == 8:
        return rng.choice([0.1, 0.2, 0.3, 1e16, 1.0, -0.0, 0.0, 5e-324])
    return rng.gauss(100, 15)


def encode(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


for case in range(400):
    n = rng.choice([0, 1, 2, 3, 4, 5, 7, 10, 20, 99, 100, 101, rng.randrange(1, 400)])
    if case % 10 == 0:
        values = [rng.randrange(0, 4) for _ in range(n)]  # many ties among ints
    else:
        values = [value() for _ in range(n)]
    print(json.dumps({"values": [encode(v) for v in values], "stats": stats(values)}))
