"""Runs inside the cblearn peer's own virtual environment (cblearn 0.4 pins numpy<2, the main
environment runs numpy 2), never imported by the job: fits cblearn's SOE and t-STE to the
training triplets and writes each embedding and cblearn's own held-out score as JSON.

Usage: python cblearn_peer.py IN.npz OUT.json, where IN.npz holds `train` and `test` (rows
i, j, k: "i closer to j than to k"), `n`, `seed`, and per run `names`, `methods` (soe or
tste) and `dims`.
"""
import json
import sys

import numpy as np
from cblearn.embedding import SOE, TSTE

ESTIMATORS = {"soe": SOE, "tste": TSTE}


def main(src: str, dst: str) -> None:
    data = np.load(src)
    n, seed = int(data["n"]), int(data["seed"])
    embeddings, scores = {}, {}
    for name, method, dim in zip(data["names"], data["methods"], data["dims"]):
        estimator = ESTIMATORS[str(method)](n_components=int(dim), random_state=seed)
        embeddings[str(name)] = estimator.fit_transform(data["train"], n_objects=n).tolist()
        scores[str(name)] = float(estimator.score(data["test"]))
    with open(dst, "w") as f:
        json.dump({"embeddings": embeddings, "scores": scores}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
