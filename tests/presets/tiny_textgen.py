"""Tiny random-weight models of the language generation presets' architectures, written into a
mirror the way the hub lays them out (``<mirror>/<repo>``): MarianMT with its two SentencePiece
models, mT5 with ``spiece.model``, Qwen2 with a byte-level BPE and its chat template, GPT-2 with
a character WordPiece vocabulary. Nothing is downloaded; each builds in about a second."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: a few lines in both languages: the tokenizers are trained on them
LINES = [
    "今天天气很好。",
    "我们在北京开会。",
    "模型在集群上训练。",
    "你好，世界！请用一句话介绍你自己。",
    "计算卡的使用率很高，作业在排队。",
    "The weather is nice today.",
    "We meet in Beijing.",
    "The model trains on the cluster.",
    "Hello, world! Introduce yourself in one sentence.",
    "The cards are busy and the jobs are queued.",
]

QWEN_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if loop.first and message['role'] != 'system' %}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def _sentencepiece(path: Path, **options: object) -> None:
    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(LINES * 3),
        model_writer=buf,
        vocab_size=100,
        hard_vocab_limit=False,
        character_coverage=1.0,
        minloglevel=2,
        **options,
    )
    path.write_bytes(buf.getvalue())


def _seeded(build: Callable[[Path], None]) -> Callable[[Path], None]:
    """The same random weights on every build."""

    def seeded(mirror: Path) -> None:
        import torch

        torch.manual_seed(0)
        build(mirror)

    return seeded


def _save(model: Any, out: Path) -> None:
    # generation stays short in tests: the programs keep to the model's own max_new_tokens
    model.generation_config.max_new_tokens = 8
    model.save_pretrained(out, safe_serialization=True)


def opus_mt(mirror: Path) -> None:
    """Helsinki-NLP/opus-mt-zh-en: MarianMT, ``source.spm``/``target.spm`` and ``vocab.json``."""
    import sentencepiece as spm
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    out = mirror / "Helsinki-NLP" / "opus-mt-zh-en"
    out.mkdir(parents=True, exist_ok=True)
    _sentencepiece(out / "source.spm", unk_id=1, eos_id=0, bos_id=-1, pad_id=-1)
    (out / "target.spm").write_bytes((out / "source.spm").read_bytes())
    pieces = spm.SentencePieceProcessor(model_file=str(out / "source.spm"))
    vocab = {"</s>": 0, "<unk>": 1}
    for i in range(pieces.get_piece_size()):
        vocab.setdefault(pieces.id_to_piece(i), len(vocab))
    vocab["<pad>"] = len(vocab)
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    tokenizer = MarianTokenizer(
        str(out / "source.spm"), str(out / "target.spm"), str(out / "vocab.json"),
        source_lang="zh", target_lang="en",
    )  # fmt: skip
    tokenizer.save_pretrained(out)
    pad = vocab["<pad>"]
    config = MarianConfig(
        vocab_size=len(vocab), d_model=16, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
        decoder_ffn_dim=32, max_position_embeddings=64, pad_token_id=pad,
        decoder_start_token_id=pad, eos_token_id=0, forced_eos_token_id=0,
    )  # fmt: skip
    _save(MarianMTModel(config), out)


def mt5_xlsum(mirror: Path) -> None:
    """csebuetnlp/mT5_multilingual_XLSum: mT5 with its SentencePiece ``spiece.model``."""
    from transformers import AutoTokenizer, MT5Config, MT5ForConditionalGeneration

    out = mirror / "csebuetnlp" / "mT5_multilingual_XLSum"
    out.mkdir(parents=True, exist_ok=True)
    _sentencepiece(out / "spiece.model", pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    (out / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "T5Tokenizer", "extra_ids": 0, "model_max_length": 512})
    )
    (out / "special_tokens_map.json").write_text(
        json.dumps({"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"})
    )
    size = len(AutoTokenizer.from_pretrained(out))
    config = MT5Config(
        vocab_size=size, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_decoder_layers=1,
        num_heads=2, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
    )  # fmt: skip
    _save(MT5ForConditionalGeneration(config), out)


def qwen_chat(mirror: Path) -> None:
    """Qwen/Qwen2.5-0.5B-Instruct: Qwen2 with a byte-level BPE and the ChatML template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen2Tokenizer

    out = mirror / "Qwen" / "Qwen2.5-0.5B-Instruct"
    out.mkdir(parents=True, exist_ok=True)
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(LINES, trainer)
    tokenizer = Qwen2Tokenizer(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        bos_token=None,
    )
    tokenizer.chat_template = QWEN_TEMPLATE
    tokenizer.save_pretrained(out)
    config = Qwen2Config(
        vocab_size=bpe.get_vocab_size(), hidden_size=16, intermediate_size=32,
        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
        max_position_embeddings=128, tie_word_embeddings=True,
        eos_token_id=bpe.token_to_id("<|im_end|>"), pad_token_id=bpe.token_to_id("<|endoftext|>"),
    )  # fmt: skip
    _save(Qwen2ForCausalLM(config), out)


def gpt2_chinese(mirror: Path) -> None:
    """uer/gpt2-chinese-cluecorpussmall: GPT-2 with a BERT character vocabulary (``vocab.txt``)."""
    from transformers import BertTokenizer, GPT2Config, GPT2LMHeadModel

    out = mirror / "uer" / "gpt2-chinese-cluecorpussmall"
    out.mkdir(parents=True, exist_ok=True)
    chars = sorted({c.lower() for line in LINES for c in line if not c.isspace()})
    words = sorted({w.strip(".,!").lower() for line in LINES for w in line.split()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *(w for w in words if w)]
    (out / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n")
    BertTokenizer(str(out / "vocab.txt")).save_pretrained(out)
    config = GPT2Config(
        vocab_size=len(dict.fromkeys(vocab)), n_positions=128, n_embd=16, n_layer=1, n_head=2,
        bos_token_id=2, eos_token_id=3, pad_token_id=0,
    )  # fmt: skip
    _save(GPT2LMHeadModel(config), out)


BUILDERS: dict[str, Callable[[Path], None]] = {
    "opus-mt-zh-en": _seeded(opus_mt),
    "mt5-summariser": _seeded(mt5_xlsum),
    "qwen-chat": _seeded(qwen_chat),
    "gpt2-chinese": _seeded(gpt2_chinese),
}
