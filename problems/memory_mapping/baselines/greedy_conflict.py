"""Baseline: greedy by live-range conflict, first fit. Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def allocate(buffers, capacity):
    """Greedy by live-range conflict, as graph colouring orders an interference graph
    (Welsh-Powell: most constrained first): buffers by decreasing conflict, the bytes of the
    other buffers live at some common time with it (ties: larger size, earlier start, index);
    each at the lowest offset where it fits; one that fits nowhere stays in slow memory."""
    n = len(buffers)
    by_start = sorted(range(n), key=lambda i: buffers[i][0])
    conflict = [0] * n
    for a, i in enumerate(by_start):  # pairs (i, j), j starting no earlier than i
        for j in by_start[a + 1 :]:
            if buffers[j][0] >= buffers[i][1]:
                break
            conflict[i] += buffers[j][2]
            conflict[j] += buffers[i][2]
    order = sorted(range(n), key=lambda i: (-conflict[i], -buffers[i][2], buffers[i][0], i))
    packing = Packing(buffers, capacity)
    for i in order:
        offset = packing.first_fit(i)
        if offset is not None:
            packing.place(i, offset)
    return packing.offsets


# EVOLVE-BLOCK-END
