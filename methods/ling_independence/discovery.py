"""Downstream: the PC algorithm (causal-learn) with its independence test swapped, scored by
structural Hamming distance against the true DAG's CPDAG and skeleton."""
from __future__ import annotations

import numpy as np
from causallearn.graph.Dag import Dag
from causallearn.graph.GeneralGraph import GeneralGraph
from causallearn.graph.GraphNode import GraphNode
from causallearn.graph.SHD import SHD
from causallearn.search.ConstraintBased.PC import pc
from causallearn.utils.DAG2CPDAG import dag2cpdag
from causallearn.utils.cit import register_ci_test

from edgert.methods.ling_independence.ling import LingCIT

register_ci_test("ling", LingCIT)


def true_cpdag(w: np.ndarray) -> GeneralGraph:
    """The CPDAG of the DAG with weights w, its nodes named as PC names them (X1, X2, ...)."""
    nodes = [GraphNode(f"X{i + 1}") for i in range(len(w))]
    dag = Dag(nodes)
    for i, j in zip(*np.nonzero(w)):
        dag.add_directed_edge(nodes[i], nodes[j])
    return dag2cpdag(dag)


def pc_graph(data: np.ndarray, test: str, alpha: float, **test_options) -> GeneralGraph:
    """PC's CPDAG with `test` ("ling", "kci", "fisherz") deciding every independence."""
    return pc(data, alpha, test, show_progress=False, **test_options).G


def shd(truth: GeneralGraph, est: GeneralGraph) -> int:
    """Node pairs whose edge (absent, undirected, or its direction) differs."""
    return SHD(truth, est).get_shd()


def skeleton_shd(truth: GeneralGraph, est: GeneralGraph) -> int:
    """Node pairs adjacent in one graph and not in the other."""
    return int((_adjacent(truth) != _adjacent(est)).sum())


def _adjacent(g: GeneralGraph) -> np.ndarray:
    return np.triu((g.graph != 0) | (g.graph.T != 0), k=1)
