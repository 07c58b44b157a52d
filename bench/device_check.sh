#!/usr/bin/env bash
# Each lever of the grid's price measured on a lent GPU (H100 or H200: named from
# torch.cuda.get_device_name in every JSON), in at most 5 minutes, leaving room to rerun it
# within a 15-minute loan. From the repository root, with requirements.txt installed:
#
#   git show 78fdc7e:src/train/stacked.py > bench/stacked_before.py   # optional, untracked: the
#                                                    # written-out AdamW step, for the optimizer's before row
#   OUT=/some/folder bash bench/device_check.sh
#
# Writes, under $OUT: gpu.json (bench/gpu.py: a run alone and packs of 16 and 32 at the grid's
# mean length, the fused AdamW step; the eval batch, model building, a process start),
# levers.json (bench/levers.py: CKA per layer on the host both ways, the optimizer step alone,
# the weight-change norms on the device, eval at batch 32 and 256, one member's checkpoint) and
# the log of each. bench/cost.py prices the grid from a gpu.json: copy it to bench/gpu.json.
set -euo pipefail
OUT=${OUT:?set OUT to the folder the results go to}
mkdir -p "$OUT"
export TOKENIZERS_PARALLELISM=false
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/nvidia_smi.csv"
before=()
if [[ -f bench/stacked_before.py ]]; then before=(--before-stacked bench/stacked_before.py); fi
# ~1.5 min: alone, packs of 16 and 32 at the grid's mean length (32), 10 timed steps each
timeout 170 python -m bench.gpu --out "$OUT/gpu.json" --packs 16 32 --lengths 32 --processes --steps 10 \
  --budget-s 120 2>&1 | tee "$OUT/gpu.log" || echo "bench.gpu stopped: $?" | tee -a "$OUT/gpu.log"
# ~1.5 min: the levers' rows (QNLI's CKA at bert-base's width: the costliest task)
timeout 120 python -m bench.levers --device cuda --out "$OUT/levers.json" --packs 16 --tasks qnli sst2 \
  --widths 768 "${before[@]}" 2>&1 | tee "$OUT/levers.log" || echo "bench.levers stopped: $?" | tee -a "$OUT/levers.log"
