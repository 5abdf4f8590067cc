"""RSS per call with many threads sharing one client: does it level off?

Starts the Hermes emulator in a child process on loopback (so only the client's memory is
measured), then runs phases of ``client.chat`` calls from ``--threads`` threads sharing one
client, and prints after each phase the process's RSS, the bytes it grew per call in that phase,
and (``--tracemalloc``) the Python-level allocations still live. Ends with whether the growth
levels off: the later half of the phases grows by less than ``--flat`` bytes per call.

    python tools/rss_threads.py --threads 32 --phases 12 --calls 4000
    MALLOC_ARENA_MAX=2 python tools/rss_threads.py --threads 32
    python tools/rss_threads.py --threads 32 --baseline   # the same load on one plain requests.Session

Bounded: ``--seconds`` (default 240) stops it between phases; loopback only.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import socket
import subprocess
import sys
import threading
import time
import tracemalloc

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class _MallInfo2(ctypes.Structure):
    # glibc's struct mallinfo2 (2.33+): every field a size_t
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def malloc_in_use() -> tuple[int, int]:
    """glibc's bytes in use by live allocations and bytes free inside its heaps (all arenas): with
    PYTHONMALLOC=malloc every Python object is in the first, so a leak grows it and fragmentation
    grows the second (and RSS) while the first stays flat."""
    fn = ctypes.CDLL("libc.so.6").mallinfo2
    fn.restype = _MallInfo2
    info = fn()
    return int(info.uordblks + info.hblkhd), int(info.fordblks)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_emulator(port: int) -> subprocess.Popen[bytes]:
    child = subprocess.Popen([sys.executable, "-m", "hermes_sdk.testing", "--port", str(port), "--api-key", "k",
                              "--max-concurrent-runs", "1000"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return child
        except OSError:
            time.sleep(0.05)
    child.kill()
    raise SystemExit("the emulator did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--phases", type=int, default=12)
    parser.add_argument("--calls", type=int, default=4000, help="calls per phase (all threads together)")
    parser.add_argument("--warmup", type=int, default=4000, help="calls before the first measure")
    parser.add_argument("--seconds", type=float, default=240.0, help="stop between phases after this long")
    parser.add_argument("--flat", type=float, default=4.0, help="bytes per call under which growth counts as flat")
    parser.add_argument("--tracemalloc", action="store_true", help="also trace Python allocations (slower)")
    parser.add_argument("--trim", action="store_true",
                        help="malloc_trim(0) before each measure: memory malloc kept goes back")
    parser.add_argument("--mallinfo", action="store_true",
                        help="also print glibc's in-use and free heap bytes (run with PYTHONMALLOC=malloc)")
    parser.add_argument("--baseline", action="store_true",
                        help="the same calls through one plain requests.Session shared by the threads, not the SDK:"
                             " whatever grows there is not the SDK's")
    args = parser.parse_args()

    import requests

    from hermes_sdk import HermesClient, HermesError

    port = free_port()
    emulator = start_emulator(port)
    client = HermesClient(f"http://127.0.0.1:{port}", "k", load_entrypoints=False)
    session = requests.Session()
    session.trust_env = False
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    body = {"model": "hermes-agent", "messages": [{"role": "user", "content": "x"}]}
    headers = {"Authorization": "Bearer k"}

    def call() -> None:
        if args.baseline:
            reply = session.post(url, json=body, headers=headers, timeout=30)
            if reply.status_code != 200 or not reply.json().get("choices"):
                raise HermesError("baseline call failed")
        else:
            client.chat(prompt="x")
    began = time.monotonic()
    per_thread = max(1, args.calls // args.threads)
    go, done = threading.Barrier(args.threads + 1), threading.Barrier(args.threads + 1)
    rounds = {"left": 0}
    failed: list[int] = []

    def worker() -> None:
        while True:
            go.wait()
            if rounds["left"] < 0:
                return
            for _ in range(per_thread):
                try:
                    call()
                except (HermesError, requests.RequestException):
                    failed.append(1)  # counted, so every thread still reaches the barrier
            done.wait()

    def phase() -> None:
        go.wait()
        done.wait()

    trim = None
    if args.trim:
        import ctypes

        trim = ctypes.CDLL("libc.so.6").malloc_trim
    workers = [threading.Thread(target=worker, daemon=True) for _ in range(args.threads)]
    try:
        for w in workers:
            w.start()
        for _ in range(max(1, args.warmup // (per_thread * args.threads))):
            phase()
        gc.collect()
        if trim is not None:
            trim(0)
        if args.tracemalloc:
            tracemalloc.start()
        calls = per_thread * args.threads
        rows = []
        base_rss = last = rss()
        base_py = tracemalloc.get_traced_memory()[0] if args.tracemalloc else 0
        print(f"client={'requests.Session' if args.baseline else 'hermes_sdk'} "
              f"threads={args.threads} calls/phase={calls} MALLOC_ARENA_MAX={os.environ.get('MALLOC_ARENA_MAX', '-')}"
              f" malloc_trim={'yes' if trim else 'no'}")
        print(f"{'phase':>5} {'calls':>8} {'RSS MiB':>8} {'B/call':>7} {'py live KiB':>11}"
              + (f" {'malloc used KiB':>15} {'malloc free KiB':>15}" if args.mallinfo else ""))
        for number in range(1, args.phases + 1):
            if time.monotonic() - began > args.seconds:
                print(f"stopped after {args.seconds:g} s")
                break
            phase()
            gc.collect()
            if trim is not None:
                trim(0)
            now = rss()
            grew = (now - last) / calls
            last = now
            py = (tracemalloc.get_traced_memory()[0] - base_py) / 1024 if args.tracemalloc else float("nan")
            rows.append(grew)
            heap = ""
            if args.mallinfo:
                used, free = malloc_in_use()
                heap = f" {used / 1024:>15.1f} {free / 1024:>15.1f}"
            print(f"{number:>5} {number * calls:>8} {now / 2**20:>8.1f} {grew:>7.1f} {py:>11.1f}{heap}")
        half = rows[len(rows) // 2:]
        late = sum(half) / len(half) if half else float("nan")
        total = (last - base_rss) / (len(rows) * calls) if rows else float("nan")
        print(f"over all phases: {total:.1f} B/call; later half: {late:.1f} B/call -> "
              + ("levels off" if late < args.flat else "still growing") + f" ({len(failed)} calls failed)")
        if args.tracemalloc:
            top = tracemalloc.take_snapshot().statistics("lineno")[:5]
            for stat in top:
                print("  ", stat)
    finally:
        rounds["left"] = -1
        try:
            go.wait(5)
        except threading.BrokenBarrierError:
            pass
        client.close()
        session.close()
        emulator.terminate()
        emulator.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
