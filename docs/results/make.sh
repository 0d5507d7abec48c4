#!/usr/bin/env bash
# Regenerate the JSON (and the figures beside it) that the docs' tables and figures are made
# from. The MkDocs hook (docs/hooks.py) turns each JSON into its table at build time.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=docs/results
edgert evaluate btta_dg --out "$out/btta_dg.json"
edgert evaluate cogmoe --out "$out/cogmoe.json"
edgert evaluate bolt --out "$out/bolt.json"
python -c "from pathlib import Path
from edgert.methods.bolt.data import TARGET, VQARow, as_rows, generate, write_robo2vlm
rows = as_rows(generate(60, 8, 4, TARGET, 0.15, seed=90))
write_robo2vlm(Path('/tmp/edgert-rows.parquet'), [VQARow(r.id, r.image,
    f\"Looking at the robot's workspace: {r.question}?\",
    [c.capitalize() for c in r.choices] + ['It cannot be told'], r.answer) for r in rows])"
edgert evaluate bolt --data /tmp/edgert-rows.parquet --quick --out "$out/bolt_rows.json"
edgert evaluate avde --out "$out/avde.json"
edgert evaluate avde --quick --out "$out/avde_quick.json"
edgert evaluate janusvln --out "$out/janusvln.json"
edgert evaluate janusvln --quick --out "$out/janusvln_quick.json"
python -m edgert.benchmarks.first_result --out "$out/first_result.json"
bash benchmarks/setup_peers.sh
edgert bench transport --out /tmp/edgert-transport
python -c "import json; r = json.load(open('/tmp/edgert-transport/results.json'));
json.dump(dict(r['transport'], machine=r['machine']), open('$out/transport.json', 'w'), indent=1)"
edgert bench reliability --out /tmp/edgert-reliability
python -c "import json; r = json.load(open('/tmp/edgert-reliability/results.json'));
json.dump(r['reliability'], open('$out/reliability.json', 'w'), indent=1)"
cp /tmp/edgert-reliability/reliability_scaling.png "$out/"
python -m edgert.benchmarks.soak bci car --out "$out/soak.json"
edgert batch ei_snn --quick --seeds 3 --out /tmp/edgert-ei_snn
python docs/results/batch_docs.py /tmp/edgert-ei_snn
edgert batch tutor_pupil --quick --seeds 3 --out /tmp/edgert-tutor_pupil
python docs/results/batch_docs.py /tmp/edgert-tutor_pupil --label case
edgert batch demol --quick --seeds 3 --out /tmp/edgert-demol
python docs/results/batch_docs.py /tmp/edgert-demol --label target,model
edgert batch sigmadock --quick --seeds 3 --out /tmp/edgert-sigmadock
python docs/results/batch_docs.py /tmp/edgert-sigmadock --label method
for job in convex_coding imagebeagle lore ling_independence microstimulation metatuner \
    social_learning r3bench llema sci2pol; do
  edgert batch "$job" --quick --seeds 3 --out "/tmp/edgert-$job"
  python docs/results/batch_docs.py "/tmp/edgert-$job"
done
python -m edgert.benchmarks.pipelines nav --out "$out/janusvln_bench.json"
