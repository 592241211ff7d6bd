# Issue 51 on one H200: `cfrjax solve SPOT --target 0.5%` of ../shared/spots, cold (an empty
# compilation cache) then warm (the same cache, a new process); usage: SPOTS=DIR OUT=DIR [EXTRA='--hands player'] [KEEP_LOGS=1: keep each run's output] bash bench/call_to_answer.sh SPOT...
set -o pipefail
SPOTS=${SPOTS:-../shared/spots}   # the spots' folder
OUT=${OUT:-bench/results/call_to_answer}; mkdir -p "$OUT"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python -c "import jax, jaxlib; print('jax', jax.__version__, jaxlib.__version__, jax.devices())"
for s in "$@"; do
  C=$(mktemp -d)
  for run in cold warm; do
    t0=$(date +%s.%N)
    timeout 200 python -m cfrjax solve $SPOTS/$s.toml --target 0.5% --json --compile-cache $C $EXTRA \
      > $OUT/$s.$run.out 2> $OUT/$s.$run.err
    rc=$?
    t1=$(date +%s.%N)
    echo "$s $run rc=$rc process_wall=$(python -c "print(round($t1-$t0,2))")"
    tail -n 1 $OUT/$s.$run.out | python -c "
import json,os,sys,subprocess
r=json.loads(sys.stdin.read())
r.update(bench='call_to_answer', spot='$s', run='$run', process_wall_s=round($t1-$t0,3), command='cfrjax solve $SPOTS/$s.toml --target 0.5% --json --compile-cache DIR $EXTRA', commit=os.environ.get('CFRJAX_COMMIT') or subprocess.run(['git','rev-parse','--short','HEAD'],capture_output=True,text=True).stdout.strip() or None)
open('$OUT/records.jsonl','a').write(json.dumps(r)+chr(10))" 2>&1 | tail -2
    tail -n 1 $OUT/$s.$run.out | python -c "
import json,sys
r=json.loads(sys.stdin.read())
print({k: r.get(k) for k in ('iterations','exploitability_pct_pot','build_s','trace_s','compile_s','compile_cache','solve_s','eval_s','ms_per_iter','seconds_to_target','target_reached','peak_bytes','memory')})" 2>&1 | tail -2
    tail -n 3 $OUT/$s.$run.err | cut -c1-300
    [ $rc = 0 ] && [ -z "$KEEP_LOGS" ] && rm -f $OUT/$s.$run.out $OUT/$s.$run.err
  done
done
