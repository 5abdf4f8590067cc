"""Run by the crash and race tests in another process: chat with one key on a SQL store.

usage: sql_child.py BASE_URL API_KEY STORE_URL KEY PROMPT THREADS START_AT
Prints one JSON line per call: {"outcome": "executed" | "replayed" | <error code>, "pid": ...}.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from hermes_sdk_sql import SQLStorePlugin

from hermes_sdk import HermesClient


def main() -> None:
    base_url, api_key, store_url, key, prompt, threads, start_at = sys.argv[1:8]
    client = HermesClient(base_url, api_key, idempotency_store=store_url, load_entrypoints=False,
                          plugins=[SQLStorePlugin()])
    lock = threading.Lock()

    def call() -> None:
        delay = float(start_at) - time.time()
        if delay > 0:
            time.sleep(delay)
        result = client.invoke("cap:hermes_agent:default:chat", {"prompt": prompt}, idempotency_key=key)
        if result.status == "completed":
            outcome = "replayed" if result.replayed else "executed"
        else:
            outcome = result.error.code if result.error is not None else result.status
        with lock:
            print(json.dumps({"outcome": outcome, "pid": os.getpid()}), flush=True)

    workers = [threading.Thread(target=call) for _ in range(int(threads))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    client.close()


if __name__ == "__main__":
    main()
