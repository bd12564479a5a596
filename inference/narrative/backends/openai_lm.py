"""The openai backend: any OpenAI-compatible server (vLLM, llama.cpp's server, Ollama), over
stdlib HTTP: the worker needs no client library for it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

from inference.narrative.lm import LMError, Sampling


class OpenAILM:
    """Streams from ``{url}/completions`` and ``{url}/chat/completions`` (server-sent events).
    stdlib HTTP only: the worker needs no client library for it."""

    def __init__(
        self, url: str, model: str = "", *, key: str = "", timeout_s: float = 10.0
    ) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.key = key
        self.timeout_s = timeout_s
        self.name = f"openai:{model or 'default'}"

    def complete(self, prompt: str, sampling: Sampling) -> Iterator[str]:
        for event in self._stream("/completions", {"prompt": prompt}, sampling):
            yield event["choices"][0].get("text") or ""

    def chat(self, messages: list[dict], sampling: Sampling, prefill: str = "") -> Iterator[str]:
        # Chat servers do not all continue a begun reply: the model is asked to begin with it,
        # and the prefill is dropped from the answer if it did.
        if prefill:
            note = {"role": "system", "content": f'Begin your reply with: "{prefill}"'}
            messages = [*messages[:-1], note, messages[-1]]
        head = ""
        for event in self._stream("/chat/completions", {"messages": messages}, sampling):
            piece = (event["choices"][0].get("delta") or {}).get("content") or ""
            if prefill and head is not None:
                head += piece
                if len(head) < len(prefill) and prefill.startswith(head.lstrip()):
                    continue  # still inside the echoed prefill
                piece = head.lstrip().removeprefix(prefill)
                head = None
            yield piece

    def _stream(self, path: str, body: dict, s: Sampling) -> Iterator[dict]:
        payload = {
            **body,
            "model": self.model or "default",
            "max_tokens": s.max_tokens,
            "temperature": s.temperature,
            "top_p": s.top_p,
            # OpenAI's own penalty, roughly what llama.cpp's repeat_penalty 1.15 does.
            "frequency_penalty": round(min(2.0, max(0.0, (s.repeat_penalty - 1.0) * 4)), 2),
            "stream": True,
        }
        if s.stop:
            payload["stop"] = list(s.stop)[:4]  # OpenAI accepts at most four
        if s.seed is not None:
            payload["seed"] = s.seed
        if s.grammar:
            # llama.cpp's servers (its own and llama-cpp-python's) take a GBNF grammar on both
            # endpoints; one that ignores it answers free text, which the caller parses leniently.
            payload["grammar"] = s.grammar
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        request = urllib.request.Request(  # noqa: S310 (the URL is the operator's setting)
            self.url + path, data=json.dumps(payload).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310
                for raw in response:
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    event = json.loads(data)
                    if event.get("choices"):
                        yield event
        except (urllib.error.URLError, OSError, ValueError, KeyError) as exc:
            raise LMError(f"{self.name} at {self.url}: {exc}") from exc
