# FlagGems' SDPA and flash campaigns, this tree (autotune teams) against 61aad8c (.gpu/old),
# side by side, one GPU and 16 cores each, cold caches of their own; results under $OUT.
set -u
mkdir -p /tmp/site
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/flag_gems*.whl .whl/sqlalchemy*.whl .whl/greenlet*.whl || exit 1
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1; nproc
lscpu | grep -E "^(Model name|Thread|Core|Socket)"; cat .gpu/REV; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"
B=${B:-300}
run() {  # name gpu cores tree impl
  local s=/tmp/ab-$1
  mkdir -p "$s"
  (cd "$s" && CUDA_VISIBLE_DEVICES=$2 HOME=$s TRITON_CACHE_DIR=$s/triton FLAGGEMS_CACHE_DIR=$s/flaggems \
     PYTHONPATH=$4:/tmp/site taskset -c $3 timeout $((B + 150)) python3 -m flashcheck.cli fuzz --impl $5 \
     --device cuda --keep-going --budget $B --database $s/db --json $OUT/$1.json > $OUT/$1.log 2>&1
   echo "$1 rc=$?" >> $OUT/$1.log) &
}
run sdpa-teams 0 0-15 $PWD flaggems-sdpa
run sdpa-before 1 16-31 $PWD/.gpu/old flaggems-sdpa
run flash-teams 2 32-47 $PWD flaggems-flash
run flash-before 3 48-63 $PWD/.gpu/old flaggems-flash
wait
for n in sdpa-teams sdpa-before flash-teams flash-before; do
  echo "== $n"; sed -n 2,5p $OUT/$n.log; grep -E "rc=|no counterexample|distinct" $OUT/$n.log | tail -3
done
gzip -f $OUT/*.json $OUT/*.log
