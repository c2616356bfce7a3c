"""Private held-out snapshots: new Abilene traffic that no public snapshot matches.

Under a run's private data seed (kit.private_data) the held-out tasks are not the
published snapshots, which a candidate could carry and look up (a 21 KB table of the
40 public snapshots' ground truth scored 1.0 held out). Each private snapshot is a
random mixture of the split's public snapshots (Dirichlet weights: link loads are linear
in the traffic matrix, so a mixture is the load of the mixed traffic matrix on the same
routes; a transit router such as KSCYng still forwards what it receives), with every
directed link's rate then scaled by its own log-normal factor (sigma 0.25), on both of
its counters alike, so the link's measured tx/rx mismatch is kept. The mixture weights and
factors come from `kit.seed`: what a candidate can carry is each link's typical load,
which the training snapshots give it anyway, never the values it is scored on.
"""

from __future__ import annotations

import math
import random

SNAPSHOTS = 10  # as many as the public held-out file has
CONCENTRATION = 0.5  # Dirichlet: one to three public snapshots dominate each mixture
LINK_SIGMA = 0.25  # per directed link: exp(N(0, 0.25)), about +-25%


def _peer(if_id: str, telemetry: dict[str, dict]) -> str:
    return telemetry[if_id]["connected_to"]


def synthesize(public: list, seed: int, snapshot_type: type) -> list:
    """`SNAPSHOTS` new snapshots (class `snapshot_type`) drawn from `public` under `seed`."""
    rng = random.Random(seed)
    base = public[0].telemetry
    out = []
    for k in range(SNAPSHOTS):
        weights = [rng.gammavariate(CONCENTRATION, 1.0) for _ in public]
        total = sum(weights) or 1.0
        weights = [w / total for w in weights]
        truth: dict[str, list[float]] = {if_id: [0.0, 0.0] for if_id in base}
        for if_id in base:  # the link leaving if_id: its tx here, its rx at the peer
            factor = math.exp(rng.gauss(0.0, LINK_SIGMA))
            peer = _peer(if_id, base)
            tx = sum(w * s.truth[if_id][1] for w, s in zip(weights, public, strict=True))
            rx = sum(w * s.truth[peer][0] for w, s in zip(weights, public, strict=True))
            truth[if_id][1] = tx * factor
            truth[peer][0] = rx * factor
        telemetry = {
            if_id: {**d, "rx_rate": truth[if_id][0], "tx_rate": truth[if_id][1]}
            for if_id, d in base.items()
        }
        out.append(snapshot_type(f"private snapshot {k + 1}", telemetry,
                                 {i: (rx, tx) for i, (rx, tx) in truth.items()}))  # fmt: skip
    return out
