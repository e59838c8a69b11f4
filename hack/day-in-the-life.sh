#!/usr/bin/env bash
# One day in the life of a modular site, from the vendors' contract to a
# GPU's RMA, with only the commands a user types: the story make demo
# tells and internal/dayinlife runs in CI (docs/day-in-the-life.md).
#
#   SEAM              the repository (default: the one this script is in)
#   BIN               its binaries (default $SEAM/bin: make build)
#   WORK              an empty directory to work in (default: a new one)
#   SLURM_CONF        a running Slurm that knows module ma's nodes, with a
#                     slurmd for gpu-a-r01-n01…n04: the burn-ins run
#                     through it and the holds drain in it. Without it the
#                     scheduler is none: each drain and undrain is printed
#                     as it would be sent, and the baselines are written by
#                     hand (as docs/lifecycle.md does)
#   FACILITYD_LISTEN  facilityd's address (default a free loopback port)
#   ALERTMANAGER      Alertmanager's URL (optional): facilityd reads its
#                     silences, and the pump trip is waited for from it too
set -euo pipefail
SEAM=${SEAM:-$(cd "$(dirname "$0")/.." && pwd)}
BIN=${BIN:-$SEAM/bin}
WORK=${WORK:-$(mktemp -d -t seam-day-XXXXXX)}
# a free loopback port: nothing answers on it
port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 10000))
    (echo > "/dev/tcp/127.0.0.1/$p") 2> /dev/null || { echo "$p"; return; }
  done
}
LISTEN=${FACILITYD_LISTEN:-127.0.0.1:$(port)}
export PATH=$BIN:$PATH SEAM_LIFECYCLE_STORE=$WORK/site.db
cd "$WORK"
NODES=(gpu-a-r01-n01 gpu-a-r01-n02 gpu-a-r01-n03 gpu-a-r01-n04)
LOOP=facility:cooling_redundancy_lost:cooling_loop=l1
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT

say() { printf '\n== %s\n' "$*"; }
# until WHAT holds (a command succeeds), for at most 120 s
wait_for() {
  local what=$1 i
  shift
  for i in $(seq 600); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "day in the life: $what did not happen within 120 s" >&2
  return 1
}
# (each reads the whole output before matching: grep -q stops at the first
# match, and under pipefail the writer's SIGPIPE would end the script)
held_by() { local out; out=$(sat lifecycle hold list "$1"); grep -q " $2 " <<<"$out"; }
# what the scheduler shows of NODES: Slurm's state and reason, or (none)
# the last commands facilityd would have sent
scheduler() {
  if [ "$SCHED" = slurm ]; then
    sinfo -h -N -n "$1" -o '%N %T %E'
  else
    grep '^would run: ' facilityd/out.log | tail -n 2 | cut -c 1-160
  fi
}
# whether the scheduler shows NODE drained (facilityd drains after it records
# the hold, so the ledger can be ahead of the scheduler by a moment)
drain_shown() {
  if [ "$SCHED" = slurm ]; then
    local out; out=$(sinfo -h -N -n "$1" -o '%T'); grep -q drain <<<"$out"
  else
    grep -q '^would run: scontrol update .*state=drain' facilityd/out.log
  fi
}
baseline() { # NODE: a passed baseline of the node, taken now (to the nanosecond: a swap may be moments old), by hand
  local shown serial
  shown=$(sat lifecycle show "$1" --format json)
  serial=$(grep -m 1 -o '"serial": "[^"]*"' <<<"$shown" | cut -d '"' -f 4)
  cat > "$1.baseline.json" <<EOF
{"format": "seam.baseline/v1", "node": "$1", "serial": "$serial",
 "taken": "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)", "tool": "by hand", "passed": true, "metrics": {"gpu_count": 4, "nccl_allreduce_busbw_gbps": 812.4}}
EOF
}
if [ -n "${SLURM_CONF:-}" ]; then SCHED=slurm; else SCHED=none; fi
export SEAM_SCHEDULER=$SCHED
echo "a day in the life of site threemodule in $WORK (scheduler: $SCHED)"

say "the vendors of the p1-ma joint sign it"
cp -r "$SEAM/contracts/examples/threemodule" site
mkdir -p keys site/signatures
for who in voltskid gpuworks ops odm integrator cx accept operator facilityd rig alice; do
  ssh-keygen -q -t ed25519 -N '' -C "$who" -f "keys/$who"
done
echo "VoltSkid namespaces=\"seam-contract\" $(cat keys/voltskid.pub)" >> site/signatures/allowed_signers
echo "GPUWorks namespaces=\"seam-contract\" $(cat keys/gpuworks.pub)" >> site/signatures/allowed_signers
contractc sign site --party VoltSkid --key keys/voltskid --boundary p1-ma
contractc sign site --party GPUWorks --key keys/gpuworks --boundary p1-ma
contractc verify site --boundary p1-ma

say "module ma's SAT plan; the site's lifecycle store (the ledger of holds too)"
contractc compile site --level sat --module ma --max-hold 1s -o plan-ma.json
for who in ops odm integrator cx accept operator facilityd; do
  echo "$who namespaces=\"seam-lifecycle\" $(cat "keys/$who.pub")" >> allowed_signers
done
cat > access.json <<'EOF'
{
  "format": "seam.lifecycle.access/v1",
  "allowed_signers_file": "allowed_signers",
  "evidence_keys_file": "keys/rig.pub",
  "roles": {
    "admin": {"may": ["access", "release-any-hold"]},
    "vendor": {"transitions": ["design>built"]},
    "integrator": {"transitions": ["built>integrated", "integrated>shipped", "shipped>installed"], "may": ["asbuilt"]},
    "commissioning": {"transitions": ["installed>commissioned", "commissioned>provisioned", "rma>commissioned"], "may": ["holds", "issues"]},
    "acceptance": {"may": ["waive"]},
    "operator": {"transitions": ["provisioned>operating", "operating>maintenance", "maintenance>operating", "*>rma", "*>decommissioned"], "may": ["holds"]},
    "facility": {"may": ["holds"]}
  },
  "members": {
    "ssh:ops": {"roles": ["admin"]}, "ssh:odm": {"roles": ["vendor"]}, "ssh:integrator": {"roles": ["integrator"]},
    "ssh:cx": {"roles": ["commissioning"]}, "ssh:accept": {"roles": ["acceptance"]}, "ssh:operator": {"roles": ["operator"]}, "ssh:facilityd": {"roles": ["facility"]}
  }
}
EOF
sat lifecycle init site --access access.json --key keys/ops
sat lifecycle import site/inventory/racks.json --key keys/integrator
sat lifecycle move ma built --reason 'built at the ODM' --key keys/odm
sat lifecycle move ma integrated --reason integrated --key keys/integrator
sat lifecycle move ma shipped --reason 'on the truck' --key keys/integrator
sat lifecycle move ma installed --reason 'on site, hall 2' --key keys/integrator

say "the SAT of module ma on the simulated site: the power skid recovers too slowly, an issue for its vendor"
set +e
sat run plan-ma.json --sim --time-scale max --contracts site --fixtures "$SEAM/fixtures" --out sat-ma \
  --defect p1-slow-recovery --sign-key keys/rig --lifecycle site.db --commission --lifecycle-key keys/cx
code=$?
set -e
[ "$code" = 2 ] || { echo "the SAT with the slow recovery should fail (exit 2), got $code" >&2; exit 1; }
sat issues list --module ma
ISSUE=$(sat issues list --module ma | awk 'NR == 2 {print $1}')
FAILED=$(sat issues list --module ma | awk 'NR == 2 {print $NF}')
say "the gate of ma's performance level refuses: the issue is open"
if sat gate L4 --module ma; then echo "the gate passed with $ISSUE open" >&2; exit 1; fi
if sat issues waive "$ISSUE" --reason 'close enough' --key keys/cx 2>/dev/null; then echo "the commissioning agent waived $ISSUE" >&2; exit 1; fi
say "the vendor fixes the recovery; the case runs again as a signed retry, and the retry closes the issue"
sat run --retry sat-ma --case "$FAILED" --sim --time-scale max --contracts site --fixtures "$SEAM/fixtures" --sign-key keys/rig
sat issues open --from sat-ma --key keys/cx
sat gate L3 --module ma
sat gate L4 --module ma
sat lifecycle move ma commissioned --reason 'gates L3 and L4 passed' --key keys/cx
sat verify sat-ma --trust keys/rig.pub
sat issues export --format csv -o issues.csv

say "after handover the site runs (sat sim: its devices and BMCs on loopback)"
sat sim site --fixtures "$SEAM/fixtures" --out simsite > sim.log 2>&1 &
pids+=($!)
wait_for "the simulated site's binding" test -f simsite/binding.cue
CTL=$(cat simsite/control.url)
curl -fsS -X POST -d '{"racks": ["ma/r01"], "state": "idle"}' "$CTL/v1/fleet/nodes" > /dev/null

say "burn-in of ${NODES[*]}: provisioned on their baselines, then in service"
if [ "$SCHED" = slurm ]; then
  sat sim-tools install gpu --site simsite
  sat burnin run --contracts site --module ma --nodes "$(IFS=,; echo "${NODES[*]}")" --out burnin-1 --tools gpu \
    --sign-key keys/rig --lifecycle site.db --lifecycle-key keys/cx --timeout 2m --parallel 4
else
  for n in "${NODES[@]}"; do
    baseline "$n"
    sat lifecycle move "$n" provisioned --baseline "$n.baseline.json" --reason 'burned in (by hand: no Slurm here)' --key keys/cx
  done
fi
for n in "${NODES[@]}"; do sat lifecycle move "$n" operating --reason 'in service' --key keys/operator; done

say "rack ma/r01 takes two more nodes, capped: caps applied through the BMCs"
contractc budget site --add ma/r01=2nodes --cap ma/r01 --caps-out caps.json
sat cap apply --site simsite --evidence caps-ev --sign-key keys/rig caps.json

say "facilityd watches the site: the one poller, the ledger in the lifecycle store, the caps"
echo "alice namespaces=\"seam-facilityd\" $(cat keys/alice.pub)" > approvers
cat > facilityd.json <<EOF
{
  "contracts": "site", "binding": "simsite", "state_dir": "facilityd", "listen": "$LISTEN",
  "scheduler": {"kind": "$SCHED"}, "poll": {"period": "250ms"}, "clear_for": "2s", "reconcile": "2s",
  "approvals": {"allowed_signers": "approvers"},
  "caps": {"file": "caps.json", "every": "10s"},
  "ledger": {"store": "site.db", "key": "keys/facilityd"}${ALERTMANAGER:+,
  \"alertmanager\": \"$ALERTMANAGER\"}
}
EOF
mkdir -p facilityd
facilityd run --config facilityd.json > facilityd/out.log 2> facilityd/log &
pids+=($!)
wait_for "facilityd" curl -fsS "http://$LISTEN/readyz"

say "a pump of loop l1 trips: facilityd drains the loop's 288 nodes"
curl -fsS -X POST -d '{"kind":"pump_trip","target":"l1/loop/cdu-1/p1"}' "$CTL/v1/faults" > /dev/null
wait_for "facilityd's hold on l1's nodes" held_by gpu-a-r01-n03 "$LOOP"
wait_for "the scheduler's drain of l1's nodes" drain_shown gpu-a-r01-n03
if [ -n "${ALERTMANAGER:-}" ]; then
  wait_for "the alarm through Prometheus and Alertmanager" sh -c "facilityd status --addr http://$LISTEN --json | grep -q '\"alertmanager:'"
  echo "facilityd heard the pump trip from its poller and from Alertmanager: one alarm, two sources"
fi
sat lifecycle hold list gpu-a-r01-n03
scheduler gpu-a-r01-n03

say "GPU 2 of gpu-a-r01-n03 throws XID 79: an RMA, a replacement fitted"
sat lifecycle move ma/r01/compute-03/gpu-2 rma --replacement SN-GPU-R0001 --only --reason 'XID 79' --key keys/operator
sat lifecycle move ma/r01/compute-03/gpu-2 commissioned --reason 'replacement fitted' --key keys/cx
sat lifecycle hold list gpu-a-r01-n03

say "the pump is replaced; alice approves the release: the node with the new GPU stays held"
curl -fsS -X DELETE "$CTL/v1/faults?kind=pump_trip&target=l1/loop/cdu-1/p1"
released=
for _ in $(seq 120); do
  if out=$(facilityd approve --addr "http://$LISTEN" --action release --owner "$LOOP" --by alice --key keys/alice \
    --why 'pump 1 of cdu-1 replaced, loop checked' 2>&1); then released=1; break; fi
  sleep 1 # the alarm must have been clear for clear_for
done
echo "$out"
[ -n "$released" ] || { echo "day in the life: the release was refused" >&2; exit 1; }
held_by gpu-a-r01-n03 burnin:swap
scheduler "$(IFS=,; echo "${NODES[*]}")"

say "gpu-a-r01-n03 is burned in again: a baseline taken after the swap returns it to the pool"
if [ "$SCHED" = slurm ]; then
  sat burnin run --contracts site --module ma --nodes "$(IFS=,; echo "${NODES[*]}")" --out burnin-2 --tools gpu \
    --sign-key keys/rig --lifecycle site.db --lifecycle-key keys/cx --timeout 2m --parallel 4
else
  baseline gpu-a-r01-n03
  sat lifecycle move ma/r01/compute-03/gpu-2 provisioned --only --baseline gpu-a-r01-n03.baseline.json \
    --reason 'burned in after the swap (by hand: no Slurm here)' --key keys/cx
fi
sat lifecycle move ma/r01/compute-03/gpu-2 operating --only --reason 'in service' --key keys/operator
sat lifecycle hold list gpu-a-r01-n03
scheduler gpu-a-r01-n03

say "the story of gpu-a-r01-n03, every bundle verified, the store checked"
sat lifecycle history gpu-a-r01-n03
for b in sat-ma caps-ev burnin-1 burnin-2; do
  if [ -d "$b" ]; then sat verify "$b" --trust keys/rig.pub; fi
done
sat lifecycle check
facilityd status --addr "http://$LISTEN"
echo "a day in the life: done ($WORK)"
