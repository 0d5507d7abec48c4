"""Any causal LM behind two calls: `generate(prompts)` and `logprob(prompts, continuations)`.

`open_lm(spec)` takes a local `transformers` model folder (or hub name already in the local
cache) or the base URL of an OpenAI-compatible server (vLLM, `transformers serve`, llama.cpp
server, or `python -m edgert.methods.lm.serve`). Scoring through an endpoint uses the
completions API with `echo` and `logprobs`, as lm-evaluation-harness does.
"""
from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from pathlib import Path
from typing import Protocol

import torch

from edgert.runtime.plugin import DataError


def quiet() -> None:
    """transformers, trl and datasets print a progress bar for every load and trainer, and
    warnings meant for large hub models; a batch job's log keeps its own lines only."""
    import datasets
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    datasets.disable_progress_bars()
    logging.getLogger("trl").setLevel(logging.ERROR)


class LM(Protocol):
    def generate(self, prompts: list[str], max_new_tokens: int = 16) -> list[str]: ...

    def logprob(self, prompts: list[str], continuations: list[str]) -> list[float]: ...


class HFModel:
    """A `transformers` causal LM on the CPU; greedy decoding, so results repeat."""

    def __init__(self, path: str | Path):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        quiet()
        if not (Path(str(path)) / "config.json").exists() and Path(str(path)).exists():
            raise DataError(f"{path}: not a transformers model folder (no config.json); give "
                            "a folder written by save_pretrained or an http:// endpoint")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(path))
            # safetensors only: a pytorch_model.bin is a pickle, and runs what it names
            self.model = AutoModelForCausalLM.from_pretrained(str(path),
                                                              use_safetensors=True).eval()
        except (OSError, ValueError) as e:
            raise DataError(f"{path}: not a transformers model folder with safetensors "
                            f"weights ({e}); give a folder written by save_pretrained or an "
                            "http:// endpoint") from e
        self.name = Path(str(path)).name

    @torch.no_grad()
    def generate(self, prompts: list[str], max_new_tokens: int = 16) -> list[str]:
        tok = self.tokenizer
        out = []
        for prompt in prompts:
            ids = tok(prompt, return_tensors="pt").input_ids  # (1, T)
            gen = self.model.generate(ids, attention_mask=torch.ones_like(ids),
                                      max_new_tokens=max_new_tokens, do_sample=False,
                                      pad_token_id=tok.pad_token_id or tok.eos_token_id)
            out.append(tok.decode(gen[0, ids.shape[1]:], skip_special_tokens=True).strip())
        return out

    @torch.no_grad()
    def token_logprobs(self, text: str) -> tuple[list[str], list[float | None], list[int]]:
        """Each token of `text`, its log-probability given the ones before (None for the
        first) and its character offset: the completions API's `echo` answer."""
        enc = self.tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
        ids = enc.input_ids  # (1, T)
        logits = self.model(ids).logits[0, :-1]  # (T-1, vocab)
        lp = torch.log_softmax(logits.float(), -1).gather(1, ids[0, 1:, None])[:, 0]
        tokens = self.tokenizer.convert_ids_to_tokens(ids[0].tolist())
        offsets = [int(s) for s, _ in enc.offset_mapping[0].tolist()]
        return tokens, [None] + lp.tolist(), offsets

    def logprob(self, prompts: list[str], continuations: list[str]) -> list[float]:
        return [_continuation_logprob(*self.token_logprobs(p + c), len(p))
                for p, c in zip(prompts, continuations)]


class Endpoint:
    """An OpenAI-compatible server's completions API; `model` defaults to the server's
    first listed model."""

    def __init__(self, url: str, model: str | None = None, timeout: float = 60.0):
        self.url = url.rstrip("/")
        if not self.url.endswith("/v1"):
            self.url += "/v1"
        self.timeout = timeout
        self.name = model or self._call("models")["data"][0]["id"]

    def _call(self, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}/{path}", data=data,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read())
        except (urllib.error.URLError, OSError) as e:
            raise DataError(f"LM endpoint {self.url}/{path}: {e}; is the server running "
                            "and OpenAI-compatible?") from e

    def generate(self, prompts: list[str], max_new_tokens: int = 16) -> list[str]:
        body = {"model": self.name, "prompt": prompts, "max_tokens": max_new_tokens,
                "temperature": 0.0}
        choices = sorted(self._call("completions", body)["choices"], key=lambda c: c["index"])
        return [c["text"].strip() for c in choices]

    def logprob(self, prompts: list[str], continuations: list[str]) -> list[float]:
        body = {"model": self.name, "prompt": [p + c for p, c in zip(prompts, continuations)],
                "max_tokens": 0, "echo": True, "logprobs": 0, "temperature": 0.0}
        choices = sorted(self._call("completions", body)["choices"], key=lambda c: c["index"])
        return [_continuation_logprob(c["logprobs"]["tokens"], c["logprobs"]["token_logprobs"],
                                      c["logprobs"]["text_offset"], len(p))
                for c, p in zip(choices, prompts)]


def _continuation_logprob(tokens: list[str], logprobs: list[float | None],
                          offsets: list[int], start: int) -> float:
    """The summed log-probability of the tokens that begin at or after character `start`."""
    picked = [lp for lp, off in zip(logprobs, offsets) if off >= start and lp is not None]
    if not picked:
        raise DataError("the continuation is empty after tokenization: nothing to score")
    return float(sum(picked))


def require(spec: str | None, field: str, choice: str) -> None:
    """A config that chose an LM (`field: choice`) must say which one, in `lm`."""
    if not spec:
        raise DataError(f"{field} '{choice}' needs lm: PATH (a transformers model folder) or "
                        "the http:// URL of an OpenAI-compatible server")


def open_lm(spec: str | Path) -> LM:
    """An endpoint for an http(s) URL, else a local `transformers` model folder."""
    text = str(spec)
    if text.startswith(("http://", "https://")):
        return Endpoint(text)
    return HFModel(text)
