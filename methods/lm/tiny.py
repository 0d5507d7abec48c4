"""Small causal LMs trained from scratch here, standing in for the large pretrained ones a
paper uses: a word-level tokenizer fitted on the job's own corpus and a GPT-2 of a few
layers, saved with `save_pretrained` so `HFModel`, the local server and `trl` load them as
they would any hub model."""
from __future__ import annotations

from pathlib import Path

import torch

SPECIALS = ["<pad>", "<unk>", "<eos>"]


def word_tokenizer(texts: list[str]):
    """A `PreTrainedTokenizerFast` over every word and punctuation mark in `texts`."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=SPECIALS))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>",
                                   eos_token="<eos>", bos_token="<eos>")


def tiny_gpt2(tokenizer, layers: int = 2, width: int = 64, heads: int = 4,
              context: int = 128):
    """A GPT-2 with `layers` blocks of `width` units (about 0.1 M weights plus embeddings)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from edgert.methods.lm.models import quiet

    quiet()
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=context, n_embd=width,
                        n_layer=layers, n_head=heads, bos_token_id=tokenizer.eos_token_id,
                        eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id)
    return GPT2LMHeadModel(config)


def pretrain(model, tokenizer, texts: list[str], steps: int, batch: int = 32, lr: float = 3e-3,
             seed: int = 0) -> list[float]:
    """Next-token training on `texts` (each ends with <eos>; padding is not a target);
    returns the loss per step."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps, pct_start=0.1)
    model.train()
    losses = []
    for _ in range(steps):
        pick = torch.randint(len(texts), (batch,), generator=gen).tolist()
        enc = tokenizer([texts[i] + " <eos>" for i in pick], return_tensors="pt", padding=True)
        labels = enc.input_ids.masked_fill(enc.attention_mask == 0, -100)  # (B, T)
        loss = model(**enc, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    model.eval()
    return losses


def save(model, tokenizer, out: Path) -> Path:
    """The folder `HFModel`, `serving` and `trl` load."""
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
