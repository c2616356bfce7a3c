"""A scripted coding agent for `--proposer command:` tests: run confined in its workspace,
it edits seed.py, calls evolve-eval, and writes what it saw into the program's EVOLVE-BLOCK
as comments (so a test reads it in the child's code). Usage:

    agent_command_script.py MODE [ARG ...]

good BODY N [S]   set f's body to BODY, call evolve-eval N times, (sleep S seconds,) print a
                  Claude-like result
hostile P... PORT try to read each path P, list $HOME's real one, reach 127.0.0.1:PORT and
                  the internet, write into each P's folder; print a fake score
replace P OLD NEW replace OLD by NEW in file P
symlink           plant a symlink to a fixed file; edit nothing else
fixed             edit a fixed line (outside the EVOLVE-BLOCK)
newfile           make a file outside the evolving set
slow              sleep for an hour (the deadline kills it)
bodies B... SAY   for each body B: set f's body to it and call evolve-eval; then print SAY
                  on stdout and stderr, and a Claude-like result
alloc MB          edit, then touch MB megabytes of memory
fork N            edit, start up to N sleeping children, write how many started
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

SEED = "seed.py"


def set_body(body: str, notes: list[str]) -> None:
    text = open(SEED).read()
    start, end = "# EVOLVE-BLOCK-START\n", "# EVOLVE-BLOCK-END"
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    comments = "".join(f"# {n.replace(chr(10), ' | ')}\n" for n in notes)
    block = f"{comments}def f(x):\n    {body}\n"
    with open(SEED, "w") as f:
        f.write(f"{head}{start}{block}{end}{tail}")


def evaluate() -> str:
    out = subprocess.run(["evolve-eval"], capture_output=True, text=True, timeout=120)
    return out.stdout.strip()


def attempt(what: str, fn) -> str:
    try:
        return f"{what}: GOT {fn()!r}"[:300]
    except Exception as e:  # every escape should end here
        return f"{what}: BLOCKED {type(e).__name__}"


def reach(host: str, port: int) -> str:
    with socket.create_connection((host, port), timeout=3) as s:
        return s.recv(100).decode()


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "good":
        body, n = args[0], int(args[1])
        set_body(body, [])
        seen = [evaluate() for _ in range(n)]
        set_body(body, [f"eval {i}: {s}" for i, s in enumerate(seen)])
        time.sleep(float(args[2]) if len(args) > 2 else 0)
        result = {"type": "result", "total_cost_usd": 0.25}
        result["usage"] = {"input_tokens": 1000, "output_tokens": 200}
        print(json.dumps(result))
    elif mode == "hostile":
        *paths, port = args
        notes = [f"env: {sorted(os.environ)}"]
        for p in paths:
            notes.append(attempt(f"read {p}", lambda p=p: open(p).read()))
            notes.append(attempt(f"list {p}", lambda p=p: os.listdir(os.path.dirname(p))))
            notes.append(attempt(f"write {p}", lambda p=p: open(p + ".pwn", "w").write("x")))
        notes.append(attempt("list /root", lambda: os.listdir("/root")))
        notes.append(attempt("local port", lambda: reach("127.0.0.1", int(port))))
        notes.append(attempt("internet", lambda: reach("1.1.1.1", 53)))
        set_body("return x + 7", notes)
        print('{"score": 1000.0, "status": "ok"}')
        print("status: ok\nscore: 1000")
    elif mode == "replace":
        path, old, new = args
        text = open(path).read()
        assert old in text, (path, old)
        with open(path, "w") as f:
            f.write(text.replace(old, new))
    elif mode == "symlink":
        os.symlink("/etc/passwd", "link.txt")
        set_body("return x + 7", [])
    elif mode == "fixed":
        with open(SEED, "a") as f:
            f.write("print('appended outside the block')\n")
    elif mode == "newfile":
        set_body("return x + 7", [])
        with open("other.py", "w") as f:
            f.write("x = 1\n")
    elif mode == "bodies":
        *bodies, say = args
        for body in bodies:
            set_body(body, [])
            evaluate()
        print(say, file=sys.stderr)
        print(say)
        result = {"type": "result", "total_cost_usd": 0.25}
        print(json.dumps(result | {"usage": {"input_tokens": 1000, "output_tokens": 200}}))
    elif mode == "alloc":
        set_body("return x + 7", [])
        hog = bytearray(int(args[0]) * 2**20)
        for i in range(0, len(hog), 4096):
            hog[i] = 1
        set_body("return x + 7", ["allocated all"])
    elif mode == "fork":
        children = []
        for _ in range(int(args[0])):
            try:
                children.append(subprocess.Popen(["sleep", "60"]))
            except OSError:
                break
        set_body("return x + 7", [f"started {len(children)}"])
        for c in children:
            c.kill()
    elif mode == "slow":
        set_body("return x + 7", [])
        time.sleep(3600)


if __name__ == "__main__":
    main()
