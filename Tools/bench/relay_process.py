"""A `journal serve` process for the benchmarks here: started on a free port, stopped with
SIGTERM (SIGKILL after 20 s)."""
import os
import re
import signal
import subprocess
import sys


def start(journal, serve_args, stderr=subprocess.DEVNULL):
    """Starts `journal serve --port 0 SERVE_ARGS…`; returns the process and its port."""
    process = subprocess.Popen([journal, "serve", "--port", "0"] + serve_args, stdout=subprocess.PIPE, stderr=stderr,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    line = process.stdout.readline().decode(errors="replace")
    match = re.search(r"ws://[^:/]+:(\d+)/", line)
    if not match:
        sys.exit("journal serve printed %r, expected its address" % line)
    return process, int(match.group(1))


def stop(process):
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
