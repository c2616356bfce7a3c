"""Baseline: greedy by size, first fit. Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def allocate(buffers, capacity):
    """Greedy by size: buffers by decreasing size (ties: earlier start, then index), each at
    the lowest offset where it fits beside the placed buffers it is live with; a buffer that
    fits nowhere below the capacity stays in slow memory."""
    packing = Packing(buffers, capacity)
    for i in sorted(range(len(buffers)), key=lambda i: (-buffers[i][2], buffers[i][0], i)):
        offset = packing.first_fit(i)
        if offset is not None:
            packing.place(i, offset)
    return packing.offsets


# EVOLVE-BLOCK-END
