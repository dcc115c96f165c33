#!/usr/bin/env bash
# gpu-check.sh — check gpupool's NVML collector on a real NVIDIA machine.
#
# Needs: the NVIDIA driver, Python 3 with PyTorch (CUDA), and the gpupool binary
# (no Go toolchain: build it elsewhere with `make build` and copy bin/gpupool here).
#
#   ./gpu-check.sh [path/to/gpupool] [seconds]
#
# It starts two PyTorch processes on GPU 0 — one that allocates 10 GB and then idles,
# one that runs matrix multiplications — records what `gpupool collector --source nvml`
# sees for the given time (default 60 s) into a trace, and checks that both PIDs appear
# with plausible memory and utilisation. Exit status 0 means the check passed.
set -euo pipefail

BIN=${1:-./gpupool}
SECS=${2:-60}
WORK=$(mktemp -d)
trap 'kill ${IDLE_PID:-} ${BUSY_PID:-} ${COL_PID:-} 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT

command -v nvidia-smi >/dev/null || { echo "FAIL: nvidia-smi not found: no NVIDIA driver here"; exit 1; }
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
	{ echo "FAIL: PyTorch with CUDA is not available to python3"; exit 1; }
[ -x "$BIN" ] || { echo "FAIL: gpupool binary not found at $BIN"; exit 1; }

echo "== GPUs"
nvidia-smi --query-gpu=index,name,memory.total,memory.used,utilization.gpu --format=csv

cat >"$WORK/idle.py" <<'PY'
import time, torch
x = torch.empty(10 * 1024**3, dtype=torch.uint8, device="cuda:0")  # hold 10 GB
x.fill_(1)
torch.cuda.synchronize()
print("idle: holding", x.numel() // 1024**2, "MiB", flush=True)
while True:
    time.sleep(1)
PY
cat >"$WORK/busy.py" <<'PY'
import torch
a = torch.randn(8192, 8192, device="cuda:0")
b = torch.randn(8192, 8192, device="cuda:0")
print("busy: running matmuls", flush=True)
while True:
    for _ in range(50):
        c = a @ b
    torch.cuda.synchronize()
PY

python3 "$WORK/idle.py" & IDLE_PID=$!
python3 "$WORK/busy.py" & BUSY_PID=$!
sleep 15  # CUDA context creation and allocation
echo "idle PID $IDLE_PID, busy PID $BUSY_PID"

"$BIN" --data-dir "$WORK/data" --log-level warn collector --source nvml --node "$(hostname)" \
	--record "$WORK/trace.jsonl" --interval 1s & COL_PID=$!
sleep "$SECS"
kill -INT $COL_PID; wait $COL_PID || true
COL_PID=

echo "== recorded $(wc -l <"$WORK/trace.jsonl") lines"
python3 - "$WORK/trace.jsonl" "$IDLE_PID" "$BUSY_PID" <<'PY'
import json, statistics, sys
path, idle, busy = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
procs, gpus = {}, {}
for line in open(path):
    r = json.loads(line)
    if r["type"] == "process":
        procs.setdefault(r["pid"], []).append(r)
    elif r["type"] == "gpu":
        gpus.setdefault(r["gpu_uuid"], []).append(r)
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and cond
check(len(gpus) > 0, f"{len(gpus)} GPU(s) sampled")
for pid, name in ((idle, "idle"), (busy, "busy")):
    rows = procs.get(pid, [])
    check(len(rows) >= 10, f"{name} PID {pid} seen in {len(rows)} samples")
    if not rows:
        continue
    mem = statistics.median(r.get("fb_used_mib", 0) for r in rows)
    util = [r["sm_util"] for r in rows if "sm_util" in r]
    med = statistics.median(util) if util else None
    print(f"     {name}: memory median {mem:.0f} MiB, sm_util median {med}, {len(util)} utilisation samples")
    if name == "idle":
        check(mem >= 9.5 * 1024, f"idle holds about 10 GB (median {mem:.0f} MiB)")
        check(med is None or med <= 0.05, f"idle sm_util near 0 ({med})")
    else:
        check(mem > 0, f"busy holds memory ({mem:.0f} MiB)")
        check(med is not None and med >= 0.3, f"busy sm_util high ({med})")
g0 = max(gpus.values(), key=len)
util = statistics.median(r.get("gpu_util", 0) for r in g0)
check(util >= 0.3, f"GPU utilisation median {util:.2f} while the matmuls run")
check(all(r.get("power_w", 1) > 0 for r in g0), "power reported")
sys.exit(0 if ok else 1)
PY
echo "PASS"
