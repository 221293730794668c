"""A tiny command agent for the examples whose steps deliver files (examples/agents.toml).

ponder runs it in the plan's workspace with the step's prompt on stdin and an explicit
environment (PATH, HOME, LANG and the PONDER_* call variables; nothing of the worker's). It
writes every file the prompt's "Files to write" line declares (a stand-in text naming the
step), answers a model gate's prompt with a verdict, and prints a one-line answer otherwise.
Replace it with a real agent (e.g. ``argv = ["claude", "-p"]``) to have the work done.
"""

import os
import sys

WRITES = "Files to write (workspace-relative): "
ITEM = "This branch handles the item: "

prompt = sys.stdin.read()
lines = prompt.splitlines()
step = os.environ.get("PONDER_STEP_ID", "step")
for line in lines:
    if line.startswith(WRITES):
        for relative in line[len(WRITES) :].split(", "):
            path = os.path.join(os.getcwd(), relative)  # the cwd is the workspace
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as out:
                out.write(f"written for {step}\n")
item = next((line[len(ITEM) :] for line in lines if line.startswith(ITEM)), None)
if item is not None and "notes/<item>.md" in prompt:  # a fan-out item's own file
    os.makedirs("notes", exist_ok=True)
    with open(os.path.join("notes", f"{item}.md"), "w") as out:
        out.write(f"notes on {item}\n")
if "GATE: PASS or GATE: FAIL" in prompt:
    print("Checked.\nGATE: PASS")
elif '"questions"' in prompt:
    print('{"questions": ["What?", "Why?", "How?"]}')
elif '"answer"' in prompt:
    print('{"question": "q", "answer": "a", "sources": []}')
else:
    print("done: " + (lines[0] if lines else ""))
