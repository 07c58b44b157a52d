#!/bin/bash
# The README's first GPU run (Fig. 1 on SST-2 at 500 examples: 13 ks x 3 trials, 5 epochs,
# train.pack=16) through the stage scripts, on a lent GPU with no hub and no DVC: a
# bert-base-shaped model with random weights (a step costs the same as with bert-base-uncased's
# weights) and bert-base-uncased's WordPiece vocabulary (the embedded MiniLM's), SST-2 from
# ../shared/glue. TINY=1: a 12-layer model of width 32, to try the script on a CPU.
#
# The kit, in .gpukit/ (git-ignored; sent with the device tool's carry): params.yaml is
# presets/gpu_first.yaml, i.e. presets/tamkin2020.yaml with these overrides (size 500, trials 3, data.tasks,
# probe.tasks and studies.progressive.tasks [sst2], progressive sizes [500], the other studies
# removed, train.pack 16) plus model.name .gpukit/bert-base-random and data.glue_dir .gpukit/glue;
# tok/ holds the embedded model's tokenizer files (data/model/{vocab.txt,tokenizer*.json,
# special_tokens_map.json}); glue/SST-2/ is ../shared/glue/SST-2. The device had no ruamel.yaml:
# its wheel was installed first (python3 -m pip install --target /tmp/site; PYTHONPATH=/tmp/site).
# Output as run on a lent NVIDIA H200: first_run_h200.log beside this file.
set -euo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
PY=${PY:-python3}
exec > >(tee "$OUT/first_run.log") 2>&1
date -u; nproc; nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
$PY -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
cp .gpukit/params.yaml params.yaml
rm -rf .gpukit/bert-base-random data/model data/tasks data/runs/studies/progressive
$PY - <<'PYEOF'
import os, shutil, torch
from transformers import BertConfig, BertModel
torch.manual_seed(0)
tiny = dict(hidden_size=32, num_attention_heads=2, intermediate_size=64) if os.environ.get("TINY") else {}
BertModel(BertConfig(**tiny)).save_pretrained(".gpukit/bert-base-random")
for f in os.listdir(".gpukit/tok"):
    shutil.copy(os.path.join(".gpukit/tok", f), ".gpukit/bert-base-random")
print(BertConfig(**tiny).num_hidden_layers, "layers, hidden", BertConfig(**tiny).hidden_size)
PYEOF
stage() { local name=$1; shift; local t0=$EPOCHREALTIME; "$@"; echo "STAGE $name: $($PY -c "print(round($EPOCHREALTIME - $t0, 1))") s"; }
stage validate $PY -m stages.validate --model data/model --out data/params_valid.txt
stage prepare_model $PY -m stages.prepare_model --out data/model
stage data $PY -m stages.build_data --model data/model --out data/tasks
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 5 > "$OUT/smi.csv" 2>/dev/null &
stage finetune_progressive timeout ${FINETUNE_TIMEOUT:-330} $PY -m stages.finetune --study progressive --model data/model --tasks data/tasks --out data/runs/studies/progressive || echo "finetune: stopped (rc $?)"
tar czf "$OUT/progressive.tgz" -C data/runs/studies progressive || true
# the features and probe stages of the same recipe, after the timed runs (SST-2's 67,349 train sentences)
stage features timeout ${PROBE_TIMEOUT:-90} $PY -m stages.features --model data/model --tokens data/tasks/sst2/tokens.npz --out data/features/sst2.npz || echo "features: stopped (rc $?)"
stage probe timeout ${PROBE_TIMEOUT:-90} $PY -m stages.probe --task sst2 --tokens data/tasks/sst2/tokens.npz --features data/features/sst2.npz --out data/runs/probe/sst2.json --predictions data/runs/probe/sst2.npz || echo "probe: stopped (rc $?)"
date -u
