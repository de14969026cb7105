"""A tiny GPT-2 (2 layers, built from a config) trained by Hugging Face's Trainer on random tokens, recorded by
KbCallback: `python hf_train.py SCENARIO OUTPUT_DIR`. Scenarios: eager, compiled (torch_compile=True, with the
aot_eager backend), raise (the model raises at optimizer step 5), broken (kb's own step hook fails), ranks (run
it under torchrun: gloo).
The lines marked `# kb` are all it takes; the test counts them against docs/integrations.md.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

from ingest.frameworks.hf import KbCallback  # kb

scenario, output_dir = sys.argv[1], sys.argv[2]
SEQ, BATCH, STEPS = 16, 4, 8
torch.manual_seed(0)


class RandomTokens(torch.utils.data.Dataset):
    def __init__(self, count: int):
        self.tokens = torch.randint(0, 64, (count, SEQ))

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, index: int) -> dict:
        return {"input_ids": self.tokens[index], "labels": self.tokens[index]}


class Failing(GPT2LMHeadModel):
    calls = 0

    def forward(self, *args, **kwargs):
        Failing.calls += self.training
        if Failing.calls == 6:  # the sixth training forward: optimizer step 5 (one micro-batch per step)
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")
        return super().forward(*args, **kwargs)


if scenario == "broken":  # a defect in kb's step timer must not stop the training
    from ingest.pytorch.start import StartedRun

    def broken(self):
        raise ValueError("a defect in kb")

    StartedRun.begin_step = broken

config = GPT2Config(vocab_size=64, n_positions=SEQ, n_embd=32, n_layer=2, n_head=2)
model = (Failing if scenario == "raise" else GPT2LMHeadModel)(config)
args = TrainingArguments(
    output_dir=output_dir, max_steps=STEPS, per_device_train_batch_size=BATCH, learning_rate=1e-3,
    logging_steps=2, eval_strategy="steps", eval_steps=4, per_device_eval_batch_size=BATCH, save_strategy="no",
    report_to="none", use_cpu=True, disable_tqdm=True, remove_unused_columns=False,
    include_num_input_tokens_seen=scenario == "ranks",  # the Trainer's own token count, gathered over ranks
    # aot_eager: dynamo and AOT autograd as inductor has them, without its code generation (minutes on 2 CPUs)
    torch_compile=scenario == "compiled", torch_compile_backend="aot_eager" if scenario == "compiled" else None,
)  # fmt: skip
trainer = Trainer(
    model=model, args=args, train_dataset=RandomTokens(BATCH * STEPS * 2), eval_dataset=RandomTokens(BATCH * 2),
    callbacks=[KbCallback(workload="tiny-gpt2", tags=["hf"], warmup_steps=2)],  # kb
)  # fmt: skip
trainer.train()
print(f"done {scenario}")
