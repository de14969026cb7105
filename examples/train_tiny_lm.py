"""Train a small transformer language model on text it generates, eager or compiled, on any torch device.

Runs on a laptop CPU in under a minute (eager). Instrumented with `ingest.pytorch.run`: under `kb record`
it hands its phase timings, compile evidence and metrics to the recorder; on its own it writes its entry
(or, with no knowledge base around, a run folder for `kb record --from`).

    kb record --workload tiny-lm --backend cpu --mode eager -- python examples/train_tiny_lm.py --mode eager
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runnable from a checkout without installing kb
from ingest.pytorch import run


class TinyLM(nn.Module):
    def __init__(self, vocab: int, dim: int, layers: int, heads: int, context: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Parameter(torch.zeros(1, context, dim))
        block = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(context), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden = self.embed(tokens) + self.position[:, : tokens.shape[1]]
        return self.head(self.blocks(hidden, mask=self.mask, is_causal=True))


def corpus(length: int, vocab: int, generator: torch.Generator) -> torch.Tensor:
    """Text with structure to learn: repeated random phrases, so the loss falls well below uniform."""
    phrases = torch.randint(0, vocab, (64, 12), generator=generator)
    picks = torch.randint(0, len(phrases), (length // 12 + 1,), generator=generator)
    return phrases[picks].flatten()[:length]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["eager", "compiled"], default="eager")
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--warmup", type=int, default=10, help="steps left out of the steady-state figures")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loss-out", help="write the loss curve here, one value per line (a reference)")
    parser.add_argument("--loss-reference", help="check the loss curve against this one (5%% relative tolerance)")
    args = parser.parse_args()
    if args.steps <= args.warmup:
        parser.error("--steps must be larger than --warmup")

    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    vocab, dim = 256, 128
    options = {
        "workload": "tiny-lm",
        "mode": args.mode,
        "device": args.device,
        "warmup_steps": args.warmup,
        "tokens_per_step": args.batch * args.context,
        "samples_per_step": args.batch,
        "settings": {name: value for name, value in vars(args).items() if not name.startswith("loss_")},
    }
    with run(**options) as r:
        with r.phase("load"):
            model = TinyLM(vocab, dim, layers=2, heads=4, context=args.context).to(args.device)
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
            data = corpus(200_000, vocab, generator).to(args.device)
        step_fn = train_step if args.mode == "eager" else torch.compile(train_step)
        for _ in range(args.steps):
            starts = torch.randint(0, len(data) - args.context - 1, (args.batch,), generator=generator)
            batch = torch.stack([data[s : s + args.context + 1] for s in starts.tolist()])
            with r.step():
                loss = step_fn(model, optimizer, batch)
            r.log("loss", loss)
        r.audit(model, model(batch[:1, :-1]))
        if args.loss_reference:
            r.check_loss_curve(args.loss_reference)
    summary = r.summary()
    timings, losses = summary["timings"], summary["logs"]["loss"]
    if args.loss_out:
        with open(args.loss_out, "w") as out:
            out.write("".join(f"{float(value)!r}\n" for value in losses))
    print(
        f"mode={args.mode} first_step={timings['first_step_s']:.3f}s "
        f"steady_step={timings['step_s']['median'] * 1000:.2f}ms loss {losses[0]:.3f} -> {losses[-1]:.3f}"
    )


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, batch: torch.Tensor) -> torch.Tensor:
    logits = model(batch[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.detach()


if __name__ == "__main__":
    main()
