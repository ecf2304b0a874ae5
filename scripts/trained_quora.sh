#!/usr/bin/env bash
# The trained cpu-budget Quora models the board shows, made again on this machine, decoded at int8 too, then timed
# with their own models: what #56 (quality and speed on one board row) and #60 (the int8 quality of the trained
# models, beside fp32) need. A run record travels; its model does not, so a fresh machine must train again.
#
# Each `bench run` is a board run's own spec, so its run id is the one the board and `STEPS=tq` of
# scripts/speed_evidence.sh name (an id is the spec's hash). --force re-runs it: a model still in the cache is found
# and not retrained; a spec whose preset now resolves to another training key (fairseq_nat, fairseq_cmlm,
# mist_minilm_l6 since their records) trains that model, and the record is written again under the same id.
#
# Run it in a clean checkout at a fixed commit (the records name it), both cores free: two trainings at a time,
# one thread each, about 4 h (Transformer 75 min, NAT 95, CMLM 80, LevT 60, InsT 66, mist_minilm_l6 56 on 2 cores),
# then the int8 decodes (minutes each), then `STEPS=tq` (about 1 h):
#   git worktree add --detach ../trained HEAD && cd ../trained && BENCH=<venv>/bin/bench bash scripts/trained_quora.sh
# `STAGES="int8 time"` skips the training stage (the models are here), `STAGES=train` stops after it.
set -u
BENCH=${BENCH:-bench}
RESULTS=${RESULTS:-results}
JOBS=${JOBS:-2}
export BENCH RESULTS

# system and settings of each board run (run ids: fairseq_transformer b0395e29, fairseq_nat 56d34669, fairseq_cmlm
# f71a0733, fairseq_levt 3707e74f, fairseq_inst 9bc7a828, mist_minilm_l6 63d155f0)
TRAIN=("fairseq_transformer --set beam=1" fairseq_nat fairseq_cmlm fairseq_levt fairseq_inst mist_minilm_l6)
# each decodes its fp32 run's model at int8 (systems/compute.py); CTranslate2 int8 decodes the Transformer's
INT8=(fairseq_nat_int8 fairseq_cmlm_int8 fairseq_levt_int8 fairseq_inst_int8 mist_minilm_l6_int8
      "fairseq_transformer_ct2 --set beam=1")

run_one() {  # one board run; its output goes to a log named after it
  local args=$1 name=${1%% *}
  # shellcheck disable=SC2086  # the settings are a word list on purpose
  $BENCH run --system $args --task quora --budget cpu --threads 1 --force --brief --results-dir "$RESULTS" \
    > "logs/trained-$name.log" 2>&1 && echo "   done $name $(date -u +%T)" || { echo "   FAILED $name (logs/trained-$name.log)"; return 1; }
}
export -f run_one
mkdir -p logs
failed=0
for stage in ${STAGES:-train int8 time}; do
  case $stage in
    train) echo "== train $(date -u +%T): ${#TRAIN[@]} models, $JOBS at a time"
           printf '%s\n' "${TRAIN[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one "$@"' _ {} || failed=1 ;;
    int8)  echo "== int8 $(date -u +%T): ${#INT8[@]} decodes of the trained models"
           printf '%s\n' "${INT8[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one "$@"' _ {} || failed=1 ;;
    time)  echo "== time $(date -u +%T): the runs' own models, paired (make speed-evidence STEPS=tq)"
           STEPS=tq bash "$(dirname "$0")/speed_evidence.sh" || failed=1 ;;
    *)     echo "unknown stage $stage (train int8 time)"; exit 2 ;;
  esac
done
echo "== done $(date -u +%T)"
exit $failed
