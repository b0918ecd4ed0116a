#!/usr/bin/env bash
# The GPU figures of issues 41, 57 and 60 in one command, for the moment a GPU is at hand (issue 60):
#
#   bash benchmarks/gpu_all.sh                 # on a machine with CUDA: at most 14 minutes (the parts' limits
#                                              # add up to 810 s; a part that runs out is named, the rest run;
#                                              # on an H200, 2026-11-30, before the two compiled parts: 252 s)
#   PARTS=tests,large-50k bash benchmarks/gpu_all.sh   # only the parts named (a comma-separated list):
#                                              # the whole run in two commands where one may last 10 minutes
#   bash benchmarks/gpu_all.sh --dry-run       # the same parts on the CPU at tiny sizes (the script's test)
#   bash benchmarks/gpu_all.sh --prepare DIR   # where the data cache is: the encoder's bundle (config,
#                                              # tokenizer, texts: a few MB) for a machine without it
#
# Parts, each with its own time limit, its output in $LOGS/<part>.log (default: gpu_all_logs/):
#   tests      the device tests (tests/test_device.py: every estimator fits, predicts, saves and
#              loads on CUDA and across devices)
#   gpu        benchmarks/gpu.py: CPU against CUDA for the LDK Gram, an exact fit, a sparse epoch
#   large-50k  benchmarks/large_n.py at 50,000 documents: the sparse GP-LVSM, the variational GP
#              classifier and gpytorch's SVGP on dense features (the peer of "at most 2x")
#   large-1m   benchmarks/large_n.py at 1,000,000 documents, the epoch cut at 200 steps and
#              extrapolated (its setup plus every step at the measured step time)
#   large-1m-b1024  the same in batches of 1,024 (a GPU's batch: a step costs about what one of
#              256 does, the GPU being mostly idle, and the epoch has a quarter of the steps)
#   large-50k-compiled  the sparse GP-LVSM at 50,000 documents with MiniBatch(compile=True): its fused
#              objective compiled (lvgp.models.fused_step), the warm-up in the first steps
#   large-50k-compiled-gpc  the variational GP classifier the same way (one epoch), a part of its own so
#              that one model's build running long leaves the other's figures
#   host-tables  benchmarks/fused_host_tables.py: the host's tables of a fused step (what the GPU waits for),
#              today's against the code before their change, and the cosines on the GPU (table_cosines)
#   encoder    benchmarks/encoder_throughput.py on CUDA (the pretrained weights where cached, else
#              the bundle of --prepare in $BUNDLE, default gpu_all_bundle/, with random weights)
#   intent     benchmarks/intent_scale.py on CUDA (issue 57): the Dirichlet GP classifier at an intent set's
#              sizes, 150 classes of synthetic queries, 1,500 and 15,000 documents, the evidence of a subset of
#              2,000 and of all 15,000 (on an H100, 2026-12-05: about 50 s)
# and then one table of the figures against the goals (benchmarks/_gpu_table.py).
#
# Environment: PYTHON (default python3), LOGS, BUNDLE, PARTS (default: every part). The repository root
# goes first on PYTHONPATH, so an lvgp that is not installed (a copied working tree) is the one measured.
set -u
cd "$(dirname "$0")/.." || exit 1
PYTHON=${PYTHON:-python3}
LOGS=${LOGS:-gpu_all_logs}
BUNDLE=${BUNDLE:-gpu_all_bundle}
export PARTS=${PARTS:-}  # read by the table (_gpu_table.py)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mode=gpu
case "${1:-}" in
  --dry-run) mode=dry ;;
  --prepare)
    [ -n "${2:-}" ] || { echo "usage: $0 --prepare DIR" >&2; exit 2; }
    exec "$PYTHON" benchmarks/encoder_throughput.py --prepare "$2" --docs 400 ;;
  "") ;;
  *) echo "usage: $0 [--dry-run | --prepare DIR]" >&2; exit 2 ;;
esac
KNOWN_PARTS="tests gpu large-50k large-1m large-1m-b1024 large-50k-compiled large-50k-compiled-gpc host-tables encoder intent"
for name in ${PARTS//,/ }; do
  case " $KNOWN_PARTS " in
    *" $name "*) ;;
    *) echo "PARTS: no part is named '$name' (the parts: $KNOWN_PARTS)" >&2; exit 2 ;;
  esac
done
if [ "$mode" = gpu ] && ! "$PYTHON" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
  echo "no CUDA device here: run with --dry-run for the CPU check of this script" >&2
  exit 2
fi
mkdir -p "$LOGS"
: >"$LOGS/parts.tsv"

# part NAME LIMIT_SECONDS COMMAND...: run it, its output in $LOGS/NAME.log, its status and seconds in parts.tsv
part() {
  local name=$1 limit=$2
  shift 2
  case ",$PARTS," in ",," | *",$name,"*) ;; *) return 0 ;; esac
  local start=$SECONDS
  echo "== $name: $*" >&2
  timeout --kill-after=10 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - start))" "$*" >>"$LOGS/parts.tsv"
  tail -n 3 "$LOGS/$name.log" >&2
}

if [ "$mode" = dry ]; then
  # the device tests are the suite's own on a CPU: here only the plumbing, a few of them. gpu.py, large_n.py
  # (with the peer) and encoder_throughput.py run with the test suite's quick options: tests/test_gpu_all.py
  # checks their output in place of tests/test_examples.py
  part tests 300 "$PYTHON" -m pytest -q -p no:cacheprovider tests/test_device.py -k "bad_device or takes_a_device"
  part gpu 300 "$PYTHON" benchmarks/gpu.py --quick
  part large-50k 300 "$PYTHON" benchmarks/large_n.py --quick --models sparse-gplvsm,variational-gpc,svgp-dense
  part large-1m 300 "$PYTHON" benchmarks/large_n.py --docs 2000 --max-steps 3 --max-length 40 --inducing 16 \
    --batch 128 --models sparse-gplvsm --threads 1 --no-profile
  part host-tables 300 "$PYTHON" benchmarks/fused_host_tables.py --quick
  part encoder 300 "$PYTHON" benchmarks/encoder_throughput.py --quick
  part intent 300 "$PYTHON" benchmarks/intent_scale.py --quick
else
  part tests 60 "$PYTHON" -m pytest -q -p no:cacheprovider tests/test_device.py
  part gpu 110 "$PYTHON" benchmarks/gpu.py --parts gram,sparse --gram-sizes 2000x10000,2000x50000,8000x10000
  part large-50k 90 "$PYTHON" benchmarks/large_n.py --docs 50000 --device cuda \
    --models sparse-gplvsm,variational-gpc,svgp-dense
  part large-1m 70 "$PYTHON" benchmarks/large_n.py --docs 1000000 --device cuda --max-steps 200 \
    --models sparse-gplvsm
  part large-1m-b1024 70 "$PYTHON" benchmarks/large_n.py --docs 1000000 --device cuda --max-steps 200 \
    --batch 1024 --models sparse-gplvsm
  part large-50k-compiled 90 "$PYTHON" benchmarks/large_n.py --docs 50000 --device cuda --max-steps 100 \
    --models sparse-gplvsm --compile-only
  part large-50k-compiled-gpc 120 "$PYTHON" benchmarks/large_n.py --docs 50000 --device cuda \
    --models variational-gpc --compile-only
  part host-tables 60 "$PYTHON" benchmarks/fused_host_tables.py --device cuda
  if [ -d "$BUNDLE" ]; then
    part encoder 50 "$PYTHON" benchmarks/encoder_throughput.py --bundle "$BUNDLE" --device cuda --threads 1 \
      --batch-size 64 --repeats 3 --paths float32,bfloat16
  else
    part encoder 50 "$PYTHON" benchmarks/encoder_throughput.py --device cuda --threads 1 --batch-size 64 \
      --repeats 3 --paths float32,bfloat16
  fi
  part intent 90 "$PYTHON" benchmarks/intent_scale.py --device cuda --threads 2 --all-up-to 15000
fi
"$PYTHON" benchmarks/_gpu_table.py "$LOGS"
