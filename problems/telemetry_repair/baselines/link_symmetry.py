"""Baseline: link-symmetry repair. Each counter is compared with its mirror on the peer
interface (my tx with the peer's rx, my rx with the peer's tx). Only the EVOLVE-BLOCK;
evolve eval completes it with seed.py's fixed code."""

# EVOLVE-BLOCK-START
from typing import Any

TOLERANCE = 0.05  # relative gap under which two mirrored counters agree (noise ~2% each)


def _repair_pair(mine: float, theirs: float) -> tuple[float, float]:
    """(repaired, confidence) for one counter given its mirror on the other end of the link."""
    if mine <= 0 and theirs <= 0:
        return 0.0, 1.0
    if mine <= 0 or theirs <= 0:  # one side dropped: take the live one
        return max(mine, theirs), 0.8
    gap = abs(mine - theirs) / max(mine, theirs)
    if gap <= TOLERANCE:
        return (mine + theirs) / 2.0, 1.0
    return (mine + theirs) / 2.0, 0.5  # a scaled side: the average is off by half the fault


def repair_network_telemetry(
    telemetry: dict[str, dict[str, Any]], topology: dict[str, list[str]]
) -> dict:
    """Average each counter with its mirror; zeros take the live side."""
    result = {}
    for if_id, data in telemetry.items():
        peer = telemetry.get(data.get("connected_to"))
        out = {"interface_status": (data["interface_status"], data["interface_status"], 1.0)}
        for field, mirror in (("rx_rate", "tx_rate"), ("tx_rate", "rx_rate")):
            if peer is None:
                out[field] = (data[field], data[field], 0.5)
            else:
                out[field] = (data[field], *_repair_pair(float(data[field]), float(peer[mirror])))
        result[if_id] = out
    return result


# EVOLVE-BLOCK-END
