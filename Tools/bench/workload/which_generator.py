#!/usr/bin/env python3
"""Which session generator the measurement tools run.

The team's standard workload is gen_session.py in $SHARED_BENCH or, when that is unset, in
../shared/bench beside the repository: the figures in docs/PERFORMANCE.md were measured on its
sessions. When it is not there, the tools fall back to session.py beside this file (the
repository's own generator, same arguments and file form, other curves) and say once that
their figures are then not comparable with docs/PERFORMANCE.md.

  python3 Tools/bench/workload/which_generator.py [TOOL]
      prints the generator's path (the note goes to standard error, as "TOOL: ...")

From Python: sys.path.insert(0, "<repo>/Tools/bench/workload"), import which_generator, then
which_generator.find("my-tool").
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
OWN = os.path.join(HERE, "session.py")


def standard():
    """Where the standard generator is expected: $SHARED_BENCH/gen_session.py, else
    <repo>/../shared/bench/gen_session.py."""
    folder = os.environ.get("SHARED_BENCH") or os.path.join(os.path.dirname(REPO), "shared", "bench")
    return os.path.join(folder, "gen_session.py")


def find(tool="workload"):
    """The generator to run: the standard one when present, else ours (with a one-line note
    on standard error)."""
    path = standard()
    if os.path.isfile(path):
        return path
    print("%s: no %s: generating with Tools/bench/workload/session.py instead; figures are not "
          "comparable with docs/PERFORMANCE.md" % (tool, path), file=sys.stderr)
    return OWN


if __name__ == "__main__":
    if len(sys.argv) > 2 or sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    print(find(*sys.argv[1:]))
