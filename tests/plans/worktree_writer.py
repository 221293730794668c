"""A command agent for worktree fan-out tests, driven by its fan-out item (a JSON object).

It runs in the item's workspace (its cwd, the item's worktree under isolation) and, in order:
sleeps ``sleep`` seconds, prints the files named in ``read`` as it sees them, writes ``write``
(path -> text), appends ``append`` (path -> text), and with ``fail`` exits 1. It prints one JSON
object: ``{"cwd": ..., "saw": {path: text or null}}``.
"""

import json
import os
import pathlib
import sys
import time

PREFIX = "This branch handles the item: "

prompt = sys.stdin.read()
line = next((x for x in prompt.splitlines() if x.startswith(PREFIX)), PREFIX + "{}")
item = json.loads(line[len(PREFIX) :])
item = item if isinstance(item, dict) else {}
time.sleep(float(item.get("sleep", 0)))
saw = {}
for rel in item.get("read", []):
    saw[rel] = pathlib.Path(rel).read_text() if os.path.isfile(rel) else None
for rel, text in item.get("write", {}).items():
    os.makedirs(os.path.dirname(rel) or ".", exist_ok=True)
    with open(rel, "w") as f:
        f.write(text)
for rel, text in item.get("append", {}).items():
    with open(rel, "a") as f:
        f.write(text)
if item.get("fail"):
    sys.stderr.write(str(item["fail"]))
    sys.exit(1)
print(json.dumps({"cwd": os.getcwd(), "saw": saw}))
