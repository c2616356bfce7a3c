"""Pictures of a run: the score curve and the lineage of the best program.

Written as PNG next to the archive (runs/<run_id>/), so a person can open
them without any server; matplotlib's Agg backend needs no display.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from evolve.archive import Archive  # noqa: E402


def write_run_pictures(archive: Archive, run_id: str) -> list[Path]:
    progs = archive.programs(run_id)
    ok = [p for p in progs if p.status == "ok" and p.score is not None]
    if not ok:
        return []
    out_dir = archive.runs_dir / run_id.replace("/", "_")
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        _score_curve(progs, ok, run_id, out_dir / "score_curve.png"),
        _lineage(archive, ok, run_id, out_dir / "lineage.png"),
    ]


def _score_curve(progs, ok, run_id: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    ax.scatter(
        [p.iteration for p in ok], [p.score for p in ok], s=12, alpha=0.5, label="valid candidate"
    )
    best, xs, ys = None, [], []
    for p in sorted(progs, key=lambda p: p.iteration):
        if p.status == "ok" and p.score is not None and (best is None or p.score > best):
            best = p.score
        if best is not None:
            xs.append(p.iteration)
            ys.append(best)
    ax.step(xs, ys, where="post", color="C3", label="best so far (train)")
    tested = [p for p in ok if p.test_score is not None]
    if tested:
        ax.scatter(
            [p.iteration for p in tested],
            [p.test_score for p in tested],
            marker="x",
            color="k",
            label="held-out score of a new best",
        )
    failed = len(progs) - len(ok)
    ax.set_title(f"{run_id}: {len(ok)} valid, {failed} failed or rejected")
    ax.set_xlabel("iteration")
    ax.set_ylabel("score (higher is better)")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _lineage(archive: Archive, ok, run_id: str, path: Path) -> Path:
    by_id = {p.program_id: p for p in ok}
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    for p in ok:
        parent = by_id.get(p.parent_id or "")
        if parent is not None:
            ax.plot(
                [parent.iteration, p.iteration],
                [parent.score, p.score],
                color="0.8",
                lw=0.7,
                zorder=1,
            )
    ax.scatter([p.iteration for p in ok], [p.score for p in ok], s=10, color="C0", zorder=2)
    best = max(ok, key=lambda p: p.score)
    chain = [
        (c.iteration, score)
        for c in archive.lineage(best.program_id)
        if (score := c.score) is not None
    ]
    ax.plot(
        [it for it, _ in chain],
        [score for _, score in chain],
        "-o",
        color="C3",
        ms=4,
        zorder=3,
        label=f"lineage of the best ({len(chain)} programs)",
    )
    ax.set_title(f"{run_id}: parent -> child edges among valid programs")
    ax.set_xlabel("iteration")
    ax.set_ylabel("score")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
