"""What ``ponder plan validate`` loads: a small plan's validation leaves jsonschema and the CEL
parser (lark) unloaded, since only a pause schema or an expression needs them and they were most
of the command's start-up; a plan that has them loads them and gets the same refusals; a worker
loads them before its first workflow task, and its sandbox passes them through."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from worker.worker import workflow_runner

LAZY = ("jsonschema", "referencing", "lark", "celpy", "workflows.plan.expression_parser")
ONE_STEP = """\
schema: ponder-plan/1
name: one
steps:
  - {id: a, kind: agent, prompt: "hi", model: sim:default}
"""
CHECKED = """\
schema: ponder-plan/1
name: checked
steps:
  - {id: a, kind: agent, prompt: "hi", model: sim:default, ensure: [{expr: "result.x >"}]}
  - id: wait
    kind: pause
    deps: [a]
    pause: {state: waiting, resume_arg: answer, schema: {type: strng}}
"""
# After a worker's imports, validating a plan that has both and checking a value against its
# pause schema run no import statement: in Temporal's sandbox one would import a fresh copy in
# the middle of a task (a workflow's input decoding and a resume's validator do both).
NO_IMPORT_AFTER_LOAD = """\
import builtins, json
import worker.worker
from workflows.json_schemas import value_problem
from workflows.plan.validate import validate_text
plan = '''schema: ponder-plan/1
name: used
steps:
  - {id: a, kind: agent, prompt: hi, model: sim:default, ensure: [{expr: 'size(result) > 1'}]}
  - id: wait
    kind: pause
    deps: [a]
    pause: {state: waiting, resume_arg: answer, schema: {type: object, required: [n]}}
'''
seen = []
real = builtins.__import__
def spy(name, *args, **kwargs):
    seen.append(name)
    return real(name, *args, **kwargs)
builtins.__import__ = spy
try:
    result = validate_text(plan)
    refused = value_problem({}, result.plan.steps[1].pause.json_schema)
finally:
    builtins.__import__ = real
print(json.dumps([result.ok, refused, seen]))
"""


def _validate(path: Path) -> tuple[int, list[str], str]:
    """Exit code, the lazy modules loaded and the output (stdout, stderr) of ``ponder plan
    validate PATH`` run by a fresh interpreter (only one shows what a command loads)."""
    probe = (
        "import json, sys\n"
        "from client.cli import cli, exit_code\n"
        f"code = exit_code(cli, args=['plan', 'validate', {str(path)!r}], prog_name='ponder')\n"
        f"lazy = {LAZY!r}\n"
        "loaded = sorted({w for w in lazy for m in sys.modules if m == w or "
        "m.startswith(w + '.')})\n"
        "print('PROBE', json.dumps([code, loaded]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    out, _, probed = done.stdout.rpartition("PROBE ")
    code, loaded = json.loads(probed)
    return code, loaded, out + done.stderr


def test_a_one_step_plan_validates_without_jsonschema_or_the_cel_parser(tmp_path: Path) -> None:
    path = tmp_path / "one.yaml"
    path.write_text(ONE_STEP)
    code, loaded, out = _validate(path)
    assert code == 0, out
    assert "valid ponder-plan/1 plan 'one': 1 steps" in out
    assert loaded == [], loaded


def test_a_pause_schema_and_an_expression_load_them_and_are_still_checked(tmp_path: Path) -> None:
    path = tmp_path / "checked.yaml"
    path.write_text(CHECKED)
    code, loaded, out = _validate(path)
    assert code == 2, out
    assert "[expr.syntax]" in out and "steps[0].ensure[0].expr" in out, out
    assert "steps[1].pause.schema" in out and "strng" in out, out
    assert loaded == ["jsonschema", "lark", "referencing", "workflows.plan.expression_parser"]


def test_a_worker_loads_them_before_any_task_and_its_sandbox_passes_them_through() -> None:
    probe = (
        "import json, sys\n"
        "import worker.worker\n"
        "print(json.dumps(sorted(m for m in sys.modules if m in ('jsonschema', 'lark', "
        "'workflows.plan.expression_parser'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(done.stdout) == ["jsonschema", "lark", "workflows.plan.expression_parser"]
    runner = workflow_runner(True)
    assert isinstance(runner, SandboxedWorkflowRunner)
    assert {"jsonschema", "referencing", "lark"} <= runner.restrictions.passthrough_modules


def test_after_a_workers_imports_validating_and_checking_a_value_import_nothing() -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_IMPORT_AFTER_LOAD],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert json.loads(done.stdout) == [True, "value.n is required", []]
