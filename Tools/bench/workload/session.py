#!/usr/bin/env python3
"""StrokeJournal's own generator of a multi-replica drawing session (canonical NDJSON input).

The team's standard workload is gen_session.py in $SHARED_BENCH, else in ../shared/bench beside
the repository: the figures in docs/PERFORMANCE.md were measured on its sessions. This script
takes the same arguments and writes files of the same form, so that every tool here runs
without anything outside the repository, but its curves are its own: figures measured on its
sessions are not comparable with docs/PERFORMANCE.md.

Usage:
  python3 Tools/bench/workload/session.py --replicas R --strokes S --points P --seed N --out DIR
                                          [--precision 2dp|float32|third|double]

Writes DIR/replica-<i>.ndjson (i = 0 .. R-1), one JSON object per line, each file holding only
the events its replica authored:
  {"type":"point","stroke":"<UUID>","x":412.37,"y":95.2,"color":"#RRGGBBAA","width":3.0,"pressure":0.61,"t":0.017}
  {"type":"end","stroke":"<UUID>"}
  {"type":"undo","stroke":"<UUID>"}  {"type":"redo","stroke":"<UUID>"}  {"type":"erase","stroke":"<UUID>"}
  {"type":"clear"}

Model:
  * R replicas draw at once on a 1000 x 800 canvas. Each has its own pen clock; the replica
    whose pen is due first acts next, so a replica only ever erases a stroke that had ended
    (on any replica) by the time it acts.
  * A stroke is exactly P points sampled at 120 Hz (t = seconds since the stroke began, with
    up to +-0.4 ms of jitter): a smooth pen path whose heading turns by two slow sine waves,
    whose speed rises and falls over the stroke, and which bounces off the canvas edges.
    Pressure ramps in and out around a wandering level. One colour (#RRGGBBAA) and one width
    per stroke. Between strokes the pen rests 0.15 to 1.2 s.
  * After each stroke the replica may undo its last visible stroke (--undo-rate), erase a
    visible ended stroke (--erase-rate; its own with p = 0.6 when it has one, else anyone's)
    and clear the canvas (--clear-rate). When its pen is next due it may first redo what it
    undid (p = 0.3); its next stroke forgets what it could redo.
  * Everything follows from --seed: the same arguments give the same bytes.

--precision MODE: how x, y, pressure and t are written (the curves are the same in every mode):
  2dp      x, y, pressure rounded to 2 decimals, t to 3 (the default)
  float32  x, y, pressure and t as a float32 input stack delivers them, widened to double
  third    x, y on a 1/3-point grid (a 3x screen); pressure = force / maxForce in float32
           arithmetic; t = the difference of two device timestamps (arbitrary doubles)
  double   full doubles everywhere

Not supported: gen_session.py's --hershey (handwritten text with a Hershey font). Tools that
need it (journal-bench's hershey row) report "n/a" without the standard generator.
"""
import argparse
import heapq
import math
import os
import random
import struct
import sys
import uuid

WIDTH, HEIGHT = 1000.0, 800.0
EDGE = 4.0          # the pen stays this far inside the canvas
RATE = 120.0        # samples per second
JITTER = 0.0004     # +- seconds on each sample time after the first

# Stroke colours, #RRGGBBAA: mostly opaque inks, some translucent highlighters.
INKS = [
    "#101820FF", "#2B2D42FF", "#D62828FF", "#F77F00FF", "#FCBF49FF", "#2A9D8FFF",
    "#264653FF", "#3A86FFFF", "#8338ECFF", "#FF006EFF", "#06D6A0FF", "#8D99AEFF",
    "#FFFFFFFF", "#FFE66D99", "#A0E7E580", "#EF476FB3",
]
# Pen widths and how often each is picked.
NIBS = [(1.0, 3), (1.5, 4), (2.0, 6), (2.5, 3), (3.0, 5), (4.0, 4), (6.0, 2), (10.0, 1), (18.0, 1)]
# A stylus's maximum force as a float32 (the "third" mode divides by it).
MAX_FORCE = struct.unpack("<f", struct.pack("<f", 6.6666667))[0]


def f32(value):
    """The float32 nearest to value, as a Python float."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


class Dice:
    """random.Random used through random() and getrandbits() only (stable across versions)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def unit(self):
        return self.rng.random()

    def between(self, low, high):
        return low + (high - low) * self.rng.random()

    def chance(self, p):
        return self.rng.random() < p

    def index(self, n):
        return min(int(self.rng.random() * n), n - 1)

    def weighted(self, pairs):
        total = sum(w for _, w in pairs)
        x = self.rng.random() * total
        for value, w in pairs:
            x -= w
            if x < 0:
                return value
        return pairs[-1][0]

    def stroke_id(self):
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4)).upper()


def pen_path(dice, n):
    """n raw samples (x, y, pressure, t) of one smooth stroke, and a device clock base."""
    x = dice.between(EDGE + 40, WIDTH - EDGE - 40)
    y = dice.between(EDGE + 40, HEIGHT - EDGE - 40)
    heading = dice.between(0, 2 * math.pi)
    speed = dice.between(150.0, 700.0)                       # px/s at full speed
    turns = [(dice.between(0.4, 3.0), dice.between(0.3, 1.4), dice.between(0, 2 * math.pi)),
             (dice.between(0.0, 5.0), dice.between(1.5, 4.0), dice.between(0, 2 * math.pi))]
    drift = dice.between(-1.2, 1.2)                          # rad/s: a slight steady curl
    level = dice.between(0.3, 0.85)
    swing, swing_hz, swing_phase = dice.between(0.02, 0.2), dice.between(0.5, 3.0), dice.between(0, 2 * math.pi)
    device_base = dice.between(3_000.0, 900_000.0)           # seconds since the device booted

    samples = []
    previous_t = 0.0
    for k in range(n):
        t = 0.0 if k == 0 else k / RATE + (2 * dice.unit() - 1) * JITTER
        u = k / (n - 1) if n > 1 else 0.5
        if k:
            dt = t - previous_t
            turn = drift + sum(a * math.sin(2 * math.pi * hz * t + phase) for a, hz, phase in turns)
            heading += turn * dt
            pace = speed * (0.3 + 0.7 * math.sin(math.pi * u) ** 0.7)
            x += pace * math.cos(heading) * dt
            y += pace * math.sin(heading) * dt
            if x < EDGE:
                x, heading = 2 * EDGE - x, math.pi - heading
            elif x > WIDTH - EDGE:
                x, heading = 2 * (WIDTH - EDGE) - x, math.pi - heading
            if y < EDGE:
                y, heading = 2 * EDGE - y, -heading
            elif y > HEIGHT - EDGE:
                y, heading = 2 * (HEIGHT - EDGE) - y, -heading
        ramp = min(1.0, u / 0.1, (1.0 - u) / 0.1) if n > 1 else 1.0
        pressure = (level + swing * math.sin(2 * math.pi * swing_hz * t + swing_phase)) * (0.25 + 0.75 * ramp)
        pressure = min(1.0, max(0.02, pressure))
        samples.append((x, y, pressure, t))
        previous_t = t
    return samples, device_base


def written(samples, device_base, precision):
    """The samples as the chosen precision mode writes them."""
    out = []
    if precision == "2dp":
        last_t = -1.0
        for x, y, p, t in samples:
            t = round(t, 3)
            if t <= last_t:
                t = round(last_t + 0.001, 3)
            last_t = t
            out.append((round(x, 2), round(y, 2), round(p, 2), t))
    elif precision == "float32":
        out = [(f32(x), f32(y), f32(p), f32(t)) for x, y, p, t in samples]
    elif precision == "third":
        for x, y, p, t in samples:
            force = f32(p * MAX_FORCE)
            stamp = device_base + t          # the device's timestamp of this sample
            out.append((round(x * 3) / 3, round(y * 3) / 3, f32(force / MAX_FORCE), stamp - device_base))
    else:  # double
        out = list(samples)
    return out


POINT = '{"type":"point","stroke":"%s","x":%r,"y":%r,"color":"%s","width":%r,"pressure":%r,"t":%r}\n'


def generate(args):
    dice = Dice(args.seed)
    os.makedirs(args.out, exist_ok=True)
    files = [open(os.path.join(args.out, "replica-%d.ndjson" % i), "w", newline="\n") for i in range(args.replicas)]
    try:
        # Per replica: strokes drawn so far, its visible strokes (oldest first), what it can redo.
        drawn = [0] * args.replicas
        visible = [[] for _ in range(args.replicas)]
        redoable = [[] for _ in range(args.replicas)]
        # Every stroke that has ended, as [end time, id, author, still visible].
        ended = []
        due = [(dice.between(0.0, 2.0), r) for r in range(args.replicas)] if args.strokes else []
        heapq.heapify(due)
        while due:
            now, r = heapq.heappop(due)
            out = files[r]
            if redoable[r] and dice.chance(0.3):
                redone = redoable[r].pop()
                redone[3] = True
                visible[r].append(redone)
                out.write('{"type":"redo","stroke":"%s"}\n' % redone[1])
            stroke = dice.stroke_id()
            ink = INKS[dice.index(len(INKS))]
            nib = dice.weighted(NIBS)
            samples, device_base = pen_path(dice, args.points)
            for x, y, p, t in written(samples, device_base, args.precision):
                out.write(POINT % (stroke, x, y, ink, nib, p, t))
            out.write('{"type":"end","stroke":"%s"}\n' % stroke)
            now += samples[-1][3]
            entry = [now, stroke, r, True]
            ended.append(entry)
            visible[r].append(entry)
            redoable[r].clear()

            # Edits, a moment after the pen lifts.
            now += dice.between(0.05, 0.4)
            if visible[r] and dice.chance(args.undo_rate):
                undone = visible[r].pop()
                undone[3] = False
                redoable[r].append(undone)
                out.write('{"type":"undo","stroke":"%s"}\n' % undone[1])
            if dice.chance(args.erase_rate):
                own = [e for e in visible[r] if e[0] <= now]
                anyone = [e for e in ended if e[3] and e[0] <= now]
                pool = own if own and dice.chance(0.6) else anyone
                if pool:
                    target = pool[dice.index(len(pool))]
                    target[3] = False
                    visible[target[2]].remove(target)
                    out.write('{"type":"erase","stroke":"%s"}\n' % target[1])
            if dice.chance(args.clear_rate):
                for e in ended:
                    if e[0] <= now and e[3]:
                        e[3] = False
                        visible[e[2]].remove(e)
                out.write('{"type":"clear"}\n')
            # The list of ended strokes only needs the visible ones from here on.
            if len(ended) > 4096:
                ended[:] = [e for e in ended if e[3]]

            drawn[r] += 1
            if drawn[r] < args.strokes:
                heapq.heappush(due, (now + dice.between(0.15, 1.2), r))
    finally:
        for f in files:
            f.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replicas", type=int, required=True)
    ap.add_argument("--strokes", type=int, required=True, help="strokes per replica")
    ap.add_argument("--points", type=int, default=200, help="points per stroke (default 200)")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True, help="folder for replica-<i>.ndjson (made if missing)")
    ap.add_argument("--precision", choices=["2dp", "float32", "third", "double"], default="2dp")
    ap.add_argument("--undo-rate", type=float, default=0.05, help="chance of an undo after a stroke (0.05)")
    ap.add_argument("--erase-rate", type=float, default=0.03, help="chance of an erase after a stroke (0.03)")
    ap.add_argument("--clear-rate", type=float, default=0.001, help="chance of a clear after a stroke (0.001)")
    args = ap.parse_args()
    if args.replicas < 1 or args.strokes < 0 or args.points < 1:
        sys.exit("session.py: --replicas and --points must be at least 1, --strokes at least 0")
    generate(args)


if __name__ == "__main__":
    main()
