"""Causal language models: a small Chinese chat model (Qwen2.5 Instruct, its chat template)
and Chinese text generation (GPT-2). Both are evaluated by perplexity, from the model's own
token loss on texts it did not write, and fine-tuned a few steps on the same kind of text."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from portal.presets import metrics_textgen as metrics
from portal.presets.kinds import Kind
from portal.presets.textgen_hub import (
    HubKind,
    read_jsonl,
    samples,
    text_field,
    token_limit,
    tokens_asked,
)
from translations import N_

ROLES = ("system", "user", "assistant")
MAX_MESSAGES = 32
MAX_CONTENT = 4000
#: a character vocabulary (BERT's) decodes Chinese with a space between characters
_CJK_GAP = re.compile(r"(?<=[\u3000-\u9fff\uff00-\uffef])\s+(?=[\u3000-\u9fff\uff00-\uffef])")


class _CausalLM(HubKind):
    auto = "AutoModelForCausalLM"
    task = "text-generation"
    default_tokens: ClassVar[int] = 64

    def pair(self, tokenizer: Any, x: Any, y: Any) -> tuple[list[int], list[int]]:
        """The token ids of one example: the context, and the continuation that is scored."""
        raise NotImplementedError

    def _rows(self, loaded: Any, x: Sequence[Any], y: Sequence[Any]) -> list[dict[str, Any]]:
        import torch

        tokenizer, _ = loaded
        rows = []
        for xi, yi in zip(x, y, strict=True):
            context, scored = self.pair(tokenizer, xi, yi)
            ids = [*context, *scored][:1024]
            labels = ([-100] * len(context) + scored)[:1024]
            rows.append({"input_ids": torch.tensor([ids]), "labels": torch.tensor([labels])})
        return rows

    def batches(self, loaded: Any, x: Sequence[Any], y: Sequence[Any]) -> list[dict[str, Any]]:
        return self._rows(loaded, x, y)

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        """Perplexity over the scored tokens of every example (the model's mean token loss,
        weighted by the tokens it was taken over)."""
        import torch

        _, net = loaded
        nll: list[float] = []
        counts: list[int] = []
        for row in self._rows(loaded, x, y):
            # the model predicts token t+1 from tokens ≤ t: the first label is never scored
            predicted = int((row["labels"][0, 1:] != -100).sum())
            if predicted == 0:
                continue
            with torch.inference_mode():
                loss = net(**{k: v.to(net.device) for k, v in row.items()}).loss
            nll.append(float(loss) * predicted)
            counts.append(predicted)
        return {
            "task": self.task,
            "metrics": {"perplexity": metrics.perplexity(nll, counts), "samples": len(counts)},
            "per_class": [],
            "labels": [],
            "confusion": [],
        }

    def continue_ids(self, loaded: Any, ids: list[int], max_new_tokens: int) -> str:
        """The model's continuation of ``ids``, decoded (the model's own decoding settings)."""
        import torch

        tokenizer, net = loaded
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        inputs = torch.tensor([ids], device=net.device)
        with torch.inference_mode():
            out = net.generate(
                inputs,
                attention_mask=torch.ones_like(inputs),
                max_new_tokens=token_limit(net, max_new_tokens),
                pad_token_id=pad,
            )
        text = tokenizer.decode(out[0, len(ids) :], skip_special_tokens=True)
        return _CJK_GAP.sub("", text).strip()


class QwenChat(_CausalLM):
    """A small Chinese chat model. Requests are ``{"messages": [{"role", "content"}, …]}``
    ending with the user's turn; the answer is ``{"reply": …}``. Perplexity is taken over the
    assistant's replies given the conversation before them. A dataset version holds
    ``*.jsonl`` lines ``{"messages": [...]}`` whose last message is the assistant's."""

    name = "qwen_chat"
    preset = "qwen-chat"
    repo = "Qwen/Qwen2.5-0.5B-Instruct"
    default_tokens = 128

    def split(self, name: str) -> tuple[list[Any], list[Any]]:
        return self._conversations([r["messages"] for r in samples()["chat"][name]])

    def from_directory(self, path: Path) -> tuple[list[Any], list[Any]]:
        return self._conversations([r["messages"] for r in read_jsonl(path, ("messages",))])

    @staticmethod
    def _conversations(conversations: list[Any]) -> tuple[list[Any], list[Any]]:
        x: list[Any] = []
        y: list[Any] = []
        for messages in conversations:
            turns = _messages(messages)
            if turns[-1]["role"] != "assistant":
                raise ValueError("a conversation ends with the assistant's reply")
            x.append(turns[:-1])
            y.append(turns[-1]["content"])
        return x, y

    def pair(self, tokenizer: Any, x: Any, y: Any) -> tuple[list[int], list[int]]:
        context = _ids(tokenizer.apply_chat_template(x, add_generation_prompt=True))
        end = tokenizer.eos_token or ""
        return context, tokenizer(y + end, add_special_tokens=False)["input_ids"]

    def parse(self, body: dict[str, Any]) -> list[Any]:
        try:
            messages = _messages(body.get("messages"))
        except ValueError:
            raise ValueError(
                N_(
                    "messages: a list of 1-32 objects {role: system, user or assistant, "
                    "content: a text of at most 4000 characters}."
                )
            ) from None
        if messages[-1]["role"] != "user":
            raise ValueError(N_("messages: the last message is the user's."))
        return [{"messages": messages, "max_new_tokens": tokens_asked(body, self.default_tokens)}]

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        tokenizer, _ = loaded
        out = []
        for given in inputs:
            item = given if isinstance(given, dict) else {"messages": given}
            ids = _ids(tokenizer.apply_chat_template(item["messages"], add_generation_prompt=True))
            limit = int(item.get("max_new_tokens", self.default_tokens))
            out.append({"reply": self.continue_ids(loaded, ids, limit)})
        return out


class GPT2Chinese(_CausalLM):
    """Chinese text generation with GPT-2 on a character vocabulary. Requests are
    ``{"prompt": …, "max_new_tokens": n}``; the answer is ``{"text": prompt + continuation}``.
    Perplexity is taken over whole texts. A dataset version holds ``*.jsonl`` lines
    ``{"text": …}`` or ``*.txt`` files (one text each)."""

    name = "gpt2_chinese"
    preset = "gpt2-chinese"
    repo = "uer/gpt2-chinese-cluecorpussmall"

    def split(self, name: str) -> tuple[list[Any], list[Any]]:
        texts = [str(t) for t in samples()["text"][name]]
        return texts, texts

    def from_directory(self, path: Path) -> tuple[list[Any], list[Any]]:
        texts = [f.read_text(encoding="utf-8").strip() for f in sorted(path.glob("*.txt"))]
        if any(path.glob("*.jsonl")):
            texts += [str(r["text"]) for r in read_jsonl(path, ("text",))]
        texts = [t for t in texts if t]
        if not texts:
            raise ValueError(f"{path}: no *.txt files or *.jsonl lines with text")
        return texts, texts

    def _prompt_ids(self, tokenizer: Any, text: str) -> list[int]:
        ids: list[int] = tokenizer(text, add_special_tokens=False)["input_ids"]
        # a BERT vocabulary's texts start with [CLS], as the model was trained
        start = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else None
        return ids if start is None else [start, *ids]

    def pair(self, tokenizer: Any, x: Any, y: Any) -> tuple[list[int], list[int]]:
        return [], self._prompt_ids(tokenizer, str(x))

    def parse(self, body: dict[str, Any]) -> list[Any]:
        prompt = text_field(body, "prompt", N_("prompt: a text of 1 to 10000 characters."))
        return [{"prompt": prompt, "max_new_tokens": tokens_asked(body, self.default_tokens)}]

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        tokenizer, _ = loaded
        out = []
        for given in inputs:
            item = given if isinstance(given, dict) else {"prompt": str(given)}
            ids = self._prompt_ids(tokenizer, item["prompt"])
            limit = int(item.get("max_new_tokens", self.default_tokens))
            out.append({"text": item["prompt"] + self.continue_ids(loaded, ids, limit)})
        return out


def _ids(encoded: Any) -> list[int]:
    """Token ids from ``apply_chat_template`` (a list, or a mapping with ``input_ids``)."""
    ids = encoded["input_ids"] if hasattr(encoded, "keys") else encoded
    return [int(i) for i in ids]


def _messages(value: Any) -> list[dict[str, str]]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_MESSAGES:
        raise ValueError("messages: a list of 1-32 messages")
    out = []
    for m in value:
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise ValueError("a message is {role: system, user or assistant, content}")
        content = m.get("content")
        if not isinstance(content, str) or len(content) > MAX_CONTENT:
            raise ValueError("a message's content is a text of at most 4000 characters")
        out.append({"role": str(m["role"]), "content": content})
    return out


KINDS: tuple[type[Kind], ...] = (QwenChat, GPT2Chinese)
