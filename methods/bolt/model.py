"""The vision-language scorer: an option's score is the summed log-likelihood of its answer
words given the image and the question, so the answer is always one of the options.

Image: a small CNN with batch norm over the pixels plus two coordinate channels (any size:
the base and the high-resolution view go through the same weights), its feature map read by
attention with question-made queries and by a max. Question: word embeddings in their places
and an MLP. Answer: a GRU decoder, a conditional language model of the fused context,
teacher-forced over each option's words. Teacher and student are the same family; the
teacher is 3.5x wider (8.8x the parameters).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from edgert.methods.bolt.questions import SIMULATED, SPECIAL, Text

PAD, BOS = SPECIAL.index("<pad>"), SPECIAL.index("<bos>")  # the same in every vocabulary
SIZES = {"student": 32, "teacher": 112}
HEADS = 4
CNN_WIDTH = 48  # the teacher's extra size goes to language and fusion, not to pixels (CPU)
ATTRIBUTES = (2, 4, 4) + (5, 6) * 3  # classes of data.attributes, in its order


def coords(x: torch.Tensor) -> torch.Tensor:
    """x with two channels of its pixel coordinates in -1..1 (so attention knows where)."""
    b, _, h, w = x.shape
    ys = torch.linspace(-1, 1, h, dtype=x.dtype).view(1, 1, h, 1).expand(b, 1, h, w)
    xs = torch.linspace(-1, 1, w, dtype=x.dtype).view(1, 1, 1, w).expand(b, 1, h, w)
    return torch.cat([x, ys, xs], 1)


class Scorer(nn.Module):
    def __init__(self, d: int = 32, words: int = len(SIMULATED.vocabulary),
                 max_question: int = SIMULATED.max_question):
        super().__init__()
        self.d, self.words, self.max_question = d, words, max_question
        c = min(d, CNN_WIDTH)
        self.conv = nn.ModuleList([nn.Conv2d(5, c, 3, stride=2, padding=1),
                                   nn.Conv2d(c, c, 3, padding=1),
                                   nn.Conv2d(c, c, 3, stride=2, padding=1)])
        self.norm = nn.ModuleList([nn.BatchNorm2d(c) for _ in range(3)])
        self.last = nn.Conv2d(c + 2, d, 1)
        self.embed = nn.Embedding(words, d, padding_idx=PAD)
        self.question = nn.Sequential(nn.Linear(max_question * d, 2 * d), nn.ReLU(),
                                      nn.Linear(2 * d, d))
        self.query = nn.Linear(d, HEADS * d)
        self.fuse = nn.Sequential(nn.Linear((HEADS + 2) * d, 2 * d), nn.ReLU(),
                                  nn.Linear(2 * d, d), nn.LayerNorm(d))
        self.decoder = nn.GRU(2 * d, d, batch_first=True)
        self.out = nn.Linear(d, words)
        self.parse = nn.Linear(2 * d, sum(ATTRIBUTES))

    def see(self, image: torch.Tensor) -> torch.Tensor:
        """(B, N, d) image tokens at a quarter of the resolution, with their coordinates."""
        h = coords(image)
        for conv, norm in zip(self.conv, self.norm):
            h = torch.relu(norm(conv(h)))
        return self.last(coords(h)).flatten(2).transpose(1, 2)

    def ask(self, question: torch.Tensor) -> torch.Tensor:
        """(B, d) question vector from its words in their places (order matters: "is the red
        block left of the blue block")."""
        return self.question(self.embed(question).flatten(1))

    def context(self, image: torch.Tensor, question: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Fused (B, d) context and the (B, d) embedding used for retrieval. The image is
        read twice: attention with HEADS question-made queries (where to look), and a max
        over the image (is there anything like it: small things vanish in an average)."""
        q = self.ask(question)
        tokens = self.see(image)
        b, n, d = tokens.shape
        queries = self.query(q).view(b, HEADS, d)
        attn = torch.softmax(tokens @ queries.transpose(1, 2) / d ** 0.5, 1)
        looked = (attn.transpose(1, 2) @ tokens).reshape(b, HEADS * d)
        ctx = self.fuse(torch.cat([q, looked, tokens.amax(1)], 1))
        return ctx, ctx

    def token_logits(self, ctx: torch.Tensor, options: torch.Tensor) -> torch.Tensor:
        """(B, K, T, V) next-word logits for every option, teacher-forced; the context
        starts the decoder and is fed again with every word (a conditional language model)."""
        b, k, t = options.shape
        inputs = torch.cat([torch.full_like(options[..., :1], BOS), options[..., :-1]], 2)
        h0 = torch.tanh(ctx).unsqueeze(1).expand(b, k, self.d).reshape(1, b * k, self.d)
        words = self.embed(inputs.reshape(b * k, t))
        given = ctx.unsqueeze(1).expand(b, k, self.d).reshape(b * k, 1, self.d).expand(-1, t, -1)
        states, _ = self.decoder(torch.cat([words, given], 2), h0.contiguous())
        return self.out(states).view(b, k, t, -1)

    def attribute_logits(self, image: torch.Tensor) -> list[torch.Tensor]:
        """Logits of each scene attribute from the pooled image tokens (vision pretraining:
        the encoder learns to see the scene before it learns to answer about it)."""
        tokens = self.see(image)
        return list(self.parse(torch.cat([tokens.amax(1), tokens.mean(1)], 1)).split(
            ATTRIBUTES, 1))

    def forward(self, image: torch.Tensor, question: torch.Tensor, options: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, K) option scores (summed answer-word log-likelihoods) and (B, d) embedding."""
        ctx, embedding = self.context(image, question)
        logp = F.log_softmax(self.token_logits(ctx, options), -1)
        words = logp.gather(3, options.unsqueeze(3)).squeeze(3)
        return (words * (options != PAD)).sum(2), embedding


def build(role: str, text: Text = SIMULATED) -> Scorer:
    return Scorer(SIZES[role], len(text.vocabulary), text.max_question)


def parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
