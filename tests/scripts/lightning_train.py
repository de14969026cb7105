"""A tiny MLP trained by Lightning on random data, recorded by KbLogger: `python lightning_train.py SCENARIO`.
Scenarios: eager, compiled (its network through torch.compile with the aot_eager backend: compiling the whole
LightningModule stops in dynamo with Lightning 2.6 and torch 2.13), raise (training_step raises at step 5),
broken (kb's own step hook fails). The lines marked `# kb` are all it takes (docs/integrations.md).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import lightning.pytorch as pl
import torch
from torch import nn

from ingest.frameworks.lightning import KbLogger  # kb

scenario = sys.argv[1]
torch.manual_seed(0)


class Regression(pl.LightningModule):
    def __init__(self, hidden: int = 32):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        if scenario == "raise" and batch_idx == 5:
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.log("train/loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val/loss", nn.functional.mse_loss(self(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


if scenario == "broken":  # a defect in kb's step timer must not stop the training
    from ingest.pytorch.start import StartedRun

    def broken(self):
        raise ValueError("a defect in kb")

    StartedRun.begin_step = broken

data = torch.utils.data.TensorDataset(torch.randn(128, 16), torch.randn(128, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
model = Regression()
if scenario == "compiled":
    model.net = torch.compile(model.net, backend="aot_eager")
trainer = pl.Trainer(
    max_steps=10, accelerator="cpu", devices=1, log_every_n_steps=2, val_check_interval=5, limit_val_batches=2,
    num_sanity_val_steps=0, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    logger=KbLogger(workload="tiny-mlp", warmup_steps=2),  # kb
    callbacks=[timer := pl.callbacks.Timer()],  # Lightning's own clock of the training, to check kb's train_s against
)  # fmt: skip
trainer.fit(model, loader, loader)
print(f"done {scenario}; Lightning's Timer: train {timer.time_elapsed('train')!r} s")
