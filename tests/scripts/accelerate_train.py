"""A tiny MLP trained with Accelerate on random data, recorded by KbTracker: `python accelerate_train.py SCENARIO`.
Scenarios: eager, compiled (dynamo_backend="aot_eager"), raise (the step raises at step 5), broken (kb's own log
hook fails). The lines marked `# kb` are all it takes (docs/integrations.md).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
from accelerate import Accelerator
from torch import nn

from ingest.frameworks.accelerate import KbTracker  # kb

scenario = sys.argv[1]
torch.manual_seed(0)

if scenario == "broken":  # a defect in kb's step timer must not stop the training
    from ingest.pytorch.start import StartedRun

    def broken(self):
        raise ValueError("a defect in kb")

    StartedRun.begin_step = broken

accelerator = Accelerator(
    cpu=True,
    dynamo_backend="aot_eager" if scenario == "compiled" else "no",
    log_with=KbTracker(workload="tiny-mlp", warmup_steps=2),  # kb
)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(96, 16), torch.randn(96, 1))
model, optimizer, loader = accelerator.prepare(model, optimizer, torch.utils.data.DataLoader(data, batch_size=8))
accelerator.init_trackers("tiny-mlp", config={"lr": 0.05, "batch": 8})
for step, (x, y) in enumerate(loader):
    if scenario == "raise" and step == 5:
        raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")
    loss = nn.functional.mse_loss(model(x), y)
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
    accelerator.log({"loss": loss.detach()}, step=step)
accelerator.end_training()
print(f"done {scenario}")
