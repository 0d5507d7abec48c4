"""The live BOLT service node: one request in, one reply out.

The student bundle runs in ONNX Runtime. For each request: the first pass (base view, a
paraphrase, the retrieval lookup) gives an answer and the router's signals; the router plans
the actions whose gain per cost clears its threshold within the request's budget; they run
best-first until the plan is done or the deadline passes; the reply carries the candidate
with the highest calibrated confidence, every action taken with its cost and time, the
exemplars and the decomposition trace. A request whose budget does not cover the first pass,
or that runs into its deadline, gets the best answer so far with `partial` set and why; a
malformed one gets an `error` naming the field.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import Field

from edgert.export.bundle import Bundle
from edgert.methods.bolt import actions as act
from edgert.methods.bolt import policy, request
from edgert.methods.bolt.data import option_tokens, question_tokens
from edgert.methods.bolt.questions import Text, parse
from edgert.methods.bolt.router import final
from edgert.runtime.backends import open_backend
from edgert.runtime.node import BadChunk, Node, Params, UserPath
from edgert.streams import Chunk, local_clock

FIRST_COST = 1.0


class Answer(Node):
    class Params(Params):
        bundle: UserPath = Field(Path("~/.cache/edgert/bolt/bundle"),
                                 description="the student bundle (edgert export bolt)")
        router: UserPath | None = Field(None, description="folder of router.json and "
                                        "memory.npz (default: the bundle's parent)")
        budget: float = Field(3.0, ge=0, description="per-request budget when the request "
                              "gives none, in first passes")
        deadline_ms: float = Field(250.0, gt=0, description="when the request gives none")
        threads: int = Field(1, ge=1)

    def start(self) -> None:
        bundle = Bundle.load(self.p.bundle)
        self.text = Text.from_dict(bundle.manifest.preprocessing)
        self.backend = open_backend(bundle, "ort-cpu", threads=self.p.threads)
        self.router, self.memory, self.temperature, self.mix = policy.load(
            self.p.router or self.p.bundle.parent)
        self.counts = {"answered": 0, "partial": 0, "rejected": 0, "spent": 0.0}

    def score(self, image: np.ndarray, questions: list) -> tuple[np.ndarray, np.ndarray]:
        out = self.backend.run({"image": image,
                                "question": question_tokens(questions, self.text),
                                "options": option_tokens(questions, self.text)})
        return out["scores"], out["embedding"]

    def process(self, inputs: dict[str, Chunk]) -> dict[str, Chunk]:
        """A malformed request is answered with an error naming the field (a robot waiting
        for its reply must not wait for a timeout) and counted as rejected."""
        chunk = inputs["in"]
        try:
            req, image = request.decode(chunk)
            q = parse(req.question, req.options, self.text)
        except (BadChunk, ValueError) as exc:
            self.counts["rejected"] += 1
            where = "" if isinstance(exc, BadChunk) else f"stream {chunk.info.name!r}: " \
                "field 'question': "
            return {"out": request.reply(chunk, {"error": f"{where}{exc}", "partial": True})}
        body = self.answer(q, image, req.budget if req.budget is not None else self.p.budget,
                           (req.deadline_ms or self.p.deadline_ms) / 1e3, chunk.timestamps[0])
        self.counts["answered"] += 1
        self.counts["partial"] += body["partial"]
        self.counts["spent"] += body["spent"]
        return {"out": request.reply(chunk, body)}

    def answer(self, q, image: np.ndarray, budget: float, deadline: float, sent: float,
               plan: list[str] | None = None) -> dict:
        """The reply body; `plan` overrides the router's (to time every action)."""
        t = local_clock()
        first = act.first_pass(self.score, [image], [q], self.memory, self.temperature)
        steps = [{"action": "first", "cost": FIRST_COST, "ms": (local_clock() - t) * 1e3}]
        gains = self.router.gain(act.features(first.signals, [q.type]))
        if plan is None:
            plan = self.router.plan({a: float(g[0]) for a, g in gains.items()},
                                    budget - FIRST_COST)
        why = "over_budget" if budget < FIRST_COST else None
        found, trace = [], {}
        for a in plan:
            if local_clock() - sent > deadline:
                why = "deadline"
                break
            t = local_clock()
            p, trace[a] = self._act(a, q, image, first)
            found.append(act.calibrate(p, self.router.temperatures[a]))
            steps.append({"action": a, "cost": self.router.costs[a],
                          "ms": (local_clock() - t) * 1e3, "answer": q.options[int(p.argmax())]})
        best = final(first.p, found)[0][:len(q.options)]
        return {"answer": q.options[int(best.argmax())], "index": int(best.argmax()),
                "confidence": float(best.max()),
                "first": {"answer": q.options[int(first.p[0].argmax())],
                          "confidence": float(first.p[0].max())},
                "actions": steps, "spent": sum(s["cost"] for s in steps), "budget": budget,
                "gains": {a: float(g[0]) for a, g in gains.items()}, "trace": trace,
                "partial": why is not None, "why": why}

    def _act(self, action: str, q, image: np.ndarray, first: act.First
             ) -> tuple[np.ndarray, object]:
        if action == "hr":
            return act.high(self.score, [image], [q]), None
        if action == "rag":
            sims, idx = self.memory.nearest(first.embedding[0], q.type)
            exemplars = [{"answer": str(self.memory.answers[i]), "similarity": float(s)}
                         for s, i in zip(sims, idx)]
            return act.rag(first, [q], self.mix), exemplars
        p, traces = act.decompose(self.score, [image], [q])
        return p, traces[0]

    def stats(self) -> dict:
        return dict(self.counts)
