"""A local OpenAI-compatible server for a `transformers` model folder: `/v1/models` and
`/v1/completions` (greedy text, or `echo` + `logprobs` scoring), enough for `Endpoint` and
for tools that speak the same API. It serves one request at a time on loopback by default.

    python -m edgert.methods.lm.serve MODEL_DIR --port 8000
"""
from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from edgert.methods.lm.models import HFModel


def _handler(model: HFModel, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _send(self, code: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": model.name,
                                                             "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/completions":
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
                with lock:
                    choices = [_choice(model, i, p, body) for i, p in enumerate(prompts)]
            except (KeyError, TypeError, ValueError) as e:
                return self._send(400, {"error": {"message": f"bad request: {e}"}})
            self._send(200, {"object": "text_completion", "model": model.name,
                             "choices": choices})

    return Handler


def _choice(model: HFModel, index: int, prompt: str, body: dict) -> dict:
    max_tokens = int(body.get("max_tokens", 16))
    text = model.generate([prompt], max_tokens)[0] if max_tokens > 0 else ""
    choice = {"index": index, "text": text, "finish_reason": "length", "logprobs": None}
    if body.get("echo") and body.get("logprobs") is not None:
        tokens, logprobs, offsets = model.token_logprobs(prompt)
        choice["text"] = prompt + choice["text"]
        choice["logprobs"] = {"tokens": tokens, "token_logprobs": logprobs,
                              "text_offset": offsets}
    return choice


def server(path: str | Path, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """The server for a model folder, not yet serving (port 0: a free one)."""
    return ThreadingHTTPServer((host, port), _handler(HFModel(path), threading.Lock()))


@contextmanager
def serving(path: str | Path, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve the model in a background thread; yields the base URL (port 0: a free one)."""
    running = server(path, host, port)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{running.server_address[1]}/v1"
    finally:
        running.shutdown()
        running.server_close()
        thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a transformers model folder")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    running = server(args.model, args.host, args.port)
    print(f"serving {args.model} at http://{args.host}:{running.server_address[1]}/v1")
    running.serve_forever()


if __name__ == "__main__":
    main()
