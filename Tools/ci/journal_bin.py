"""What every campaign and benchmark takes as --journal-bin: an executable `journal`, or a
usage error that says how to build one (not a traceback at the first launch)."""
import argparse
import os
import shutil


def journal_binary(path):
    """argparse `type=` for --journal-bin: the binary's absolute path."""
    found = path if os.sep in path else shutil.which(path)
    if not found or not (os.path.isfile(found) and os.access(found, os.X_OK)):
        configuration = "debug" if "/debug/" in path else "release"
        raise argparse.ArgumentTypeError(
            "%s is no executable journal: build it first (swift build -c %s --product journal)" % (path, configuration))
    return os.path.abspath(found)
