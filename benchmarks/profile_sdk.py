"""Profile the SDK hot paths against the benchmark server: ``python -m benchmarks.profile_sdk [stream|chat]``."""

from __future__ import annotations

import cProfile
import pstats
import sys

from benchmarks.run import API_KEY, PROMPT, Server
from hermes_sdk import HermesClient


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "stream"
    server = Server()
    try:
        client = HermesClient(server.base_url, API_KEY, load_entrypoints="--installed" in argv)
        if what == "stream":
            server.config(events=10_000)

            def work() -> None:
                for _ in range(3):
                    for _ in client.chat_stream(prompt=PROMPT, max_events=100_000):
                        pass
        else:
            server.config()

            def work() -> None:
                for _ in range(2000):
                    client.chat(prompt=PROMPT)
        work()
        prof = cProfile.Profile()
        prof.runcall(work)
        pstats.Stats(prof).sort_stats(argv[1] if len(argv) > 1 else "tottime").print_stats(30)
        client.close()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
