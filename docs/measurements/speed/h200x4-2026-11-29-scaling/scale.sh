# The project kernel: MODE=one, four one-GPU campaigns side by side (one GPU and 16 cores each);
# MODE=four, one campaign over the four GPUs (64 workers, every core). Cold caches; under $OUT.
set -u
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader | head -1; nproc; cat .gpu/REV
B=${B:-300}
one() {  # name gpu cores
  local s=/tmp/scale-$1
  mkdir -p "$s"
  (cd "$s" && CUDA_VISIBLE_DEVICES=$2 TRITON_CACHE_DIR=$s/triton taskset -c $3 timeout $((B + 150)) \
     python3 -m flashcheck.cli fuzz --impl flash --device cuda --keep-going --budget $B --database $s/db \
     --json $OUT/$1.json > $OUT/$1.log 2>&1; echo "$1 rc=$?" >> $OUT/$1.log) &
}
if [ "$MODE" = one ]; then
  one gpu0 0 0-15; one gpu1 1 16-31; one gpu2 2 32-47; one gpu3 3 48-63
  wait
  names="gpu0 gpu1 gpu2 gpu3"
elif [ "$MODE" = alone ]; then
  one alone 0 0-63
  wait
  names=alone
else
  s=/tmp/scale-four; mkdir -p $s
  (cd $s && CUDA_VISIBLE_DEVICES=0,1,2,3 TRITON_CACHE_DIR=$s/triton timeout $((B + 150)) python3 -m flashcheck.cli fuzz \
     --impl flash --device cuda --keep-going --budget $B --database $s/db --json $OUT/four.json > $OUT/four.log 2>&1
   echo "four rc=$?" >> $OUT/four.log)
  names=four
fi
for n in $names; do echo "== $n"; sed -n 1,4p $OUT/$n.log; grep -E "rc=|no counterexample|distinct" $OUT/$n.log | tail -2; done
gzip -f $OUT/*.json $OUT/*.log
