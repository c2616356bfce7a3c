"""Baseline: TFLite's arena planner (greedy by size, best-fit gap), the seed's own block. Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def allocate(buffers, capacity):
    """TFLite's arena planner (ArenaPlanner + SimpleMemoryArena), capped at `capacity`.

    Order: buffers live over the whole program first (by index), then by decreasing
    size, ties by earlier start. Each goes into the smallest gap between the placed
    buffers it is live with (lowest offset on ties); if no gap between them holds it,
    on top of the highest of them. Where that top would pass the capacity the buffer
    stays in slow memory (TFLite's arena would grow instead)."""
    first = min((b[0] for b in buffers), default=0)
    last = max((b[1] for b in buffers), default=0)

    def key(i):
        lo, up, size = buffers[i]
        whole = lo == first and up == last
        return (0, i, 0) if whole else (1, -size, lo, i)

    packing = Packing(buffers, capacity)
    for i in sorted(range(len(buffers)), key=key):
        size, inner, top = buffers[i][2], [], 0
        for start, end in packing.blockers(i):
            if start >= top + size:
                inner.append((start - top, top))
            top = max(top, end)
        offset = min(inner)[1] if inner else top
        if offset + size <= capacity:
            packing.place(i, offset)
    return packing.offsets


# EVOLVE-BLOCK-END
