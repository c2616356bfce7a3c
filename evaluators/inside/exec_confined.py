"""python -I -S exec_confined.py RULES TARGET ARGV...: Landlock this process to RULES
(a JSON list of [path, rights], children.py's), then become TARGET with ARGV.

Started by children.py in place of every process a native evaluator starts, so the
candidate's compiler, its binary and whatever they start never hold more than RULES.
Exit 126 (its reason on stderr) when Landlock fails other than by being unavailable,
127 when TARGET cannot be executed. Stdlib only, and loads landlock.py by path: `-I`
keeps this folder off sys.path.
"""

import importlib.util
import json
import os
import sys


def _landlock():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "landlock.py")
    spec = importlib.util.spec_from_file_location("evolve_landlock", path)
    if spec is None or spec.loader is None:
        raise OSError(f"landlock.py is missing beside {__file__}")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv):
    rules, target, args = json.loads(argv[1]), argv[2], argv[3:]
    try:
        _landlock().restrict((), (), [(str(p), int(a)) for p, a in rules])
    except OSError as e:
        print(f"evolve: cannot confine {target}: {e}", file=sys.stderr)
        return 126
    try:
        os.execv(target, args or [target])
    except OSError as e:
        print(f"evolve: cannot execute {target}: {e}", file=sys.stderr)
        return 127
    return 127


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stderr.flush()
    os._exit(code)
