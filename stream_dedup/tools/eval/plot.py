"""The PNG of `eval --plot`: precision against recall as the distance threshold t grows, one curve
per strategy (`distances.Curve`), the point at t = k marked.

matplotlib is a dev extra, imported only here; the Agg backend draws without a display.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ...errors import StreamDedupError
from .distances import Curve

_LAST_T = 32  # past half the bits every strategy flags nearly everything


def plot_curves(curves: Sequence[Curve], k: int, title: str, path: str) -> None:
    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # its font-cache notices
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise StreamDedupError("--plot needs matplotlib, a dev extra: pip install -e '.[dev]'") \
            from exc
    fig, ax = plt.subplots(figsize=(7.5, 6), dpi=120)
    for c in curves:
        (line,) = ax.plot(c.recall[: _LAST_T + 1], c.precision[: _LAST_T + 1], marker=".",
                          markersize=3, linewidth=1.2, label=c.method)
        ax.plot([c.recall[k]], [c.precision[k]], marker="o", color=line.get_color())
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title(f"{title}: fingerprint alone, threshold t = 0..{_LAST_T} bits "
                 f"(dot: t = {k})", fontsize=10)
    ax.legend(loc="lower left", fontsize=9)
    fig.tight_layout()
    try:
        fig.savefig(path)
    except OSError as exc:
        raise StreamDedupError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        plt.close(fig)
