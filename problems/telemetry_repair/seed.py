"""Network telemetry repair: detect and fix wrong interface counters (seed: the ADRS initial program).

Fixed API (the code outside the EVOLVE block): the evaluator calls
run_repair(telemetry, topology) once per task, which calls
repair_network_telemetry.

telemetry: interface id ("A_to_B", on router A facing router B) -> {
    "interface_status": "up" | "down", "rx_rate": Mbps received, "tx_rate": Mbps sent,
    "connected_to": the peer interface ("B_to_A"), "local_router": "A", "remote_router": "B"}
topology: router id -> the ids of its interfaces.

Return, for every interface of the input, a dict whose "rx_rate", "tx_rate" and
"interface_status" are (original, repaired, confidence) tuples, confidence in
[0, 1]; other fields may be copied through. Some counters are wrong (zeroed or
scaled, alone or all of one router's at once) and all carry about 2% noise.
Invariants to use: link symmetry (my tx ~ the peer's rx, my rx ~ the peer's tx)
and, roughly, flow conservation at a router (traffic in ~ traffic out).
"""

# EVOLVE-BLOCK-START
from typing import Any


def repair_network_telemetry(
    telemetry: dict[str, dict[str, Any]], topology: dict[str, list[str]]
) -> dict:
    """ADRS's starting point: no repair at all. Every counter is reported as 0 with full
    confidence and the status is kept as it came."""
    result = {}
    for if_id, data in telemetry.items():
        status = data.get("interface_status", "unknown")
        result[if_id] = {
            "rx_rate": (0, 0, 1.0),
            "tx_rate": (0, 0, 1.0),
            "interface_status": (status, status, 1.0),
            "connected_to": data.get("connected_to"),
            "local_router": data.get("local_router"),
            "remote_router": data.get("remote_router"),
        }
    return result


# EVOLVE-BLOCK-END


def run_repair(telemetry: dict, topology: dict) -> dict:
    """The entry point the evaluator calls."""
    return repair_network_telemetry(telemetry, topology)
