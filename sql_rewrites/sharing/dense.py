"""Dense (numpy) versions of the graph routines that touch every edge.

The bitset graph (graph.py) suits branch and bound; GWMIN, degrees and neighbour-weight
sums over a whole graph of thousands of vertices are faster on a boolean matrix.
Results equal the bitset versions (same tie-breaking, float64 sums).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def to_matrix(adjacency: Sequence[int], n: int) -> np.ndarray:
    """``(n, n)`` boolean adjacency matrix of bitset rows."""
    if n == 0:
        return np.zeros((0, 0), dtype=bool)
    nbytes = (n + 7) // 8
    buf = b"".join(a.to_bytes(nbytes, "little") for a in adjacency)
    bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8).reshape(n, nbytes), axis=1, bitorder="little")
    return bits[:, :n].astype(bool)


def from_mask(mask: int, n: int) -> np.ndarray:
    """Boolean vector of a bitset."""
    if n == 0:
        return np.zeros(0, dtype=bool)
    raw = np.frombuffer(mask.to_bytes((n + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[:n].astype(bool)


def to_mask(vector: np.ndarray) -> int:
    """Bitset of a boolean vector."""
    if vector.size == 0:
        return 0
    return int.from_bytes(np.packbits(vector.astype(np.uint8), bitorder="little").tobytes(), "little")


def degrees(matrix: np.ndarray, alive: np.ndarray) -> np.ndarray:
    """Degree of every vertex counting only ``alive`` neighbours."""
    return matrix[:, alive].sum(axis=1)


def neighbour_weights(matrix: np.ndarray, weights: np.ndarray, alive: np.ndarray) -> np.ndarray:
    """Sum of the weights of each vertex's ``alive`` neighbours (float64)."""
    w = np.where(alive, weights, 0.0)
    return np.fromiter((w[row].sum() for row in matrix), dtype=np.float64, count=len(matrix))


def gwmin_dense(matrix: np.ndarray, weights: np.ndarray, alive: np.ndarray) -> np.ndarray:
    """GWMIN on the ``alive`` subgraph; same choices as :func:`mwis.gwmin`."""
    rem = alive.copy()
    deg = degrees(matrix, rem).astype(np.int64)
    chosen = np.zeros(len(weights), dtype=bool)
    while rem.any():
        ratio = np.where(rem, weights / (deg + 1), -np.inf)
        v = int(np.argmax(ratio))
        removed = rem & matrix[v]
        removed[v] = True
        chosen[v] = True
        rem &= ~removed
        deg -= matrix[removed].sum(axis=0)
    return chosen
