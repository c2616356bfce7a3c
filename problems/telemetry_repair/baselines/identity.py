"""Baseline: no repair. Every counter and status is returned as it came, with full
confidence. Only the EVOLVE-BLOCK; evolve eval completes it with seed.py's fixed code."""

# EVOLVE-BLOCK-START
from typing import Any


def repair_network_telemetry(
    telemetry: dict[str, dict[str, Any]], topology: dict[str, list[str]]
) -> dict:
    """Identity: trust every input value (confidence 1.0)."""
    result = {}
    for if_id, data in telemetry.items():
        result[if_id] = {
            field: (data[field], data[field], 1.0)
            for field in ("rx_rate", "tx_rate", "interface_status")
        }
    return result


# EVOLVE-BLOCK-END
