#!/usr/bin/env python3
"""Runs a test command and, if it goes silent, says where it stands before ending it.

    Tools/ci/suite/watchdog.py [--silence SECONDS] [--log FILE] -- swift test --traits FaultInjection

The suite prints a line every second or so while it works; a run that prints nothing for
--silence seconds (default 600) is taken as hung. Then, before ending it, the watchdog prints
the tests that started and never ended (Swift Testing's "started" lines without their
"passed"/"failed"/"skipped"), every process of the run with its children, and each test
process's threads with their stacks (gdb, when installed), so that a hang seen once on
someone else's machine can be read afterwards. Its exit status is the command's, or 124 when
it was ended for silence. Output goes through unchanged (and to --log, when given).
"""
import argparse
import os
import re
import selectors
import signal
import subprocess
import sys
import time

# Swift Testing colours its marks on a terminal or when run directly: matched without them.
COLOURS = re.compile(r"\x1b\[[0-9;]*m")
STARTED = re.compile(r"◇ Test (?:case passing .* to )?(\S+\(.*?\)) started\.")
# Any mark: ✔ passed, ✘ failed, ➜ skipped, ━ passed with known issues.
ENDED = re.compile(r"^\S+ Test (\S+\(.*?\)) (?:with \d+ test cases? )?(?:passed|failed|skipped)")


def descendants(pid):
    """Every process below `pid`, read from /proc (no psutil on a fresh machine)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except OSError:
            continue
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def report_hang(pid, running, silence, out):
    def say(text):
        out(f"watchdog: {text}\n")
    say(f"no output for {silence} s; the run is taken as hung")
    say(f"tests started and not ended ({len(running)}): " + (", ".join(sorted(running)) or "none"))
    processes = descendants(pid)
    for child in processes:
        say(f"process {child}: {command_line(child)[:300]}")
    gdb = "/usr/bin/gdb"
    for child in processes:
        if "xctest" not in command_line(child) and "PackageTests" not in command_line(child):
            continue
        if not os.path.exists(gdb):
            say("gdb is not installed: no stacks (apt-get install gdb)")
            break
        try:
            stacks = subprocess.run([gdb, "-p", str(child), "-batch", "-ex", "thread apply all bt 25"],
                                    capture_output=True, text=True, timeout=120).stdout
        except subprocess.TimeoutExpired:
            stacks = "gdb did not answer within 120 s"
        say(f"stacks of process {child}:")
        out(stacks)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--silence", type=float, default=600)
    parser.add_argument("--log")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    arguments = parser.parse_args()
    command = arguments.command[1:] if arguments.command[:1] == ["--"] else arguments.command
    if not command:
        parser.error("no command given")
    log = open(arguments.log, "w") if arguments.log else None

    def out(text):
        sys.stdout.write(text)
        sys.stdout.flush()
        if log:
            log.write(text)
            log.flush()

    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    selector = selectors.DefaultSelector()
    selector.register(child.stdout, selectors.EVENT_READ)
    running, pending, last_output = set(), b"", time.monotonic()
    while True:
        if not selector.select(timeout=5):
            if time.monotonic() - last_output < arguments.silence:
                continue
            report_hang(child.pid, running, int(arguments.silence), out)
            # The test process is not always in the command's process group (`swift test`
            # starts it in one of its own, and it outlived a group kill once): each by pid.
            for pid in descendants(child.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            return 124
        chunk = os.read(child.stdout.fileno(), 1 << 16)
        if not chunk:
            break
        last_output = time.monotonic()
        out(chunk.decode(errors="replace"))
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            text = COLOURS.sub("", line.decode(errors="replace"))
            if match := STARTED.search(text):
                running.add(match.group(1))
            elif match := ENDED.search(text):
                running.discard(match.group(1))
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
