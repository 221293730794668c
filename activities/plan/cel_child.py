"""A CEL evaluator process, one of a worker's few, started and replaced by ``activities.plan.cel``.

A plan's expressions are untrusted input on a shared worker, and a thread cannot be stopped, so
they are evaluated here, in a child process the worker kills when one overruns its 2 s. The
child also bounds itself:

- its address space (``RLIMIT_AS``, 1 GiB): a value that keeps growing fails ``MemoryError``;
- a meter on cel-python's evaluator: every AST node visited and every comprehension iteration
  counts, and the evaluation stops at 10,000 (``MeterExceeded``, a ``BaseException`` so that no
  ``except Exception`` inside cel-python can swallow it);
- the plan validator runs again on every text (names, functions, bounds), and the functions it
  does not offer (timestamps, durations, ...) are removed from cel-python's table besides;
- it dies with the worker (``PR_SET_PDEATHSIG``) and exits when its input closes.

Protocol over stdin/stdout, each message a 4-byte big-endian length and UTF-8 JSON:
``{"ready": true}`` once; then per request ``{"expressions": [...], "bindings": {...}, "key": K}``
-> ``{"accepted": true}`` after the bindings are converted, then one
``{"ok": bool, "value": ..., "error": ...}`` per expression, in order (so the worker times each
one and knows which overran). The converted values are kept under ``K`` until the next
bindings arrive: ``{"expressions": [...], "key": K}`` evaluates more over them (the worker hands
a request's expressions over one at a time, between other runs' turns), and any other key is
refused, so one request never evaluates over another's values.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import signal
import struct
import sys
from collections import OrderedDict
from typing import Any, BinaryIO

import celpy.celtypes as celtypes

__all__ = [
    "METER_LIMIT",
    "MeterExceeded",
    "main",
    "read_message",
    "to_cel",
    "to_json",
    "write_message",
]

METER_LIMIT = 10_000
MEMORY_LIMIT_BYTES = 1024 * 1024 * 1024
MAX_REQUEST_BYTES = 16 * 1024 * 1024
MAX_ERROR_CHARS = 500
MAX_DEPTH = 1000
MAX_VALUE_BYTES = 256 * 1024  # workflows.plan.check_types.MAX_VALUE_BYTES
_HEADER = struct.Struct(">I")


class MeterExceeded(BaseException):
    """The evaluation visited more nodes and iterations than the meter allows."""


def read_message(stream: BinaryIO, limit: int = MAX_REQUEST_BYTES) -> Any:
    """One message, or None at end of input."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise ValueError(f"a message of {size} bytes is over the {limit} byte limit")
    body = stream.read(size)
    if len(body) < size:
        return None
    return json.loads(body)


def write_message(stream: BinaryIO, message: Any) -> None:
    body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def _die_with_parent() -> None:
    """Linux: SIGKILL when the worker goes (even by SIGKILL); elsewhere stdin EOF covers it."""
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the worker died before the line above
            os._exit(0)


def _limit_memory() -> None:
    with contextlib.suppress(Exception):
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."


class _Engine:
    """cel-python with the meter, the allowlist and a cache of parsed texts."""

    def __init__(self) -> None:
        import celpy
        import celpy.celtypes as celtypes
        import celpy.evaluation as evaluation

        from workflows.plan.expressions import COMPREHENSIONS, FUNCTIONS, TYPE_NAMES

        self.celpy = celpy
        self.types = celtypes
        self.evaluation = evaluation
        allowed = set(FUNCTIONS) | set(TYPE_NAMES) | set(COMPREHENSIONS)
        for name in list(evaluation.base_functions):
            if name[:1].isalpha() and name not in allowed:
                del evaluation.base_functions[name]  # timestamps, durations, bytes, ...
        self.env = celpy.Environment()
        self.asts: OrderedDict[str, Any] = OrderedDict()
        engine = self

        class Metered(evaluation.Evaluator):  # type: ignore[misc, name-defined]
            count = 0

            def _visit_tree(self, tree: Any) -> Any:
                engine.tick()
                return super()._visit_tree(tree)

            def function_eval(self, name: Any, exprlist: Any = None) -> Any:
                return engine.scalar_string(name, exprlist) or super().function_eval(name, exprlist)

            def method_eval(self, target: Any, name: Any, exprlist: Any = None) -> Any:
                args = [target, *(exprlist or [])]
                return engine.scalar_string(name, args) or super().method_eval(
                    target, name, exprlist
                )

            def sub_evaluator(self, ast: Any) -> Any:
                return Metered(ast, activation=self.activation)

            def evaluate(self, context: Any = None) -> Any:
                engine.tick()  # one comprehension iteration (the top level counts once)
                return super().evaluate(context)

        self.metered = Metered
        self.meter = 0

    def scalar_string(self, name: Any, args: Any) -> Any:
        """cel-python gives ``string(list or map)`` its Python repr; CEL converts scalars only."""
        if str(name) != "string" or not isinstance(args, list):
            return None
        if any(isinstance(a, self.types.ListType | self.types.MapType) for a in args):
            return self.evaluation.CELEvalError("no such overload: string() takes a scalar")
        return None

    def tick(self) -> None:
        self.meter += 1
        if self.meter > METER_LIMIT:
            raise MeterExceeded()

    def ast(self, text: str) -> Any:
        ast = self.asts.get(text)
        if ast is None:
            ast = self.env.compile(text)
            self.asts[text] = ast
            if len(self.asts) > 512:
                self.asts.popitem(last=False)
        return ast

    def bind(self, bindings: dict[str, Any]) -> dict[str, Any]:
        return {name: to_cel(value) for name, value in bindings.items()}

    def evaluate(self, text: str, context: dict[str, Any], names: set[str]) -> dict[str, Any]:
        from workflows.plan.expressions import analyse, unknown_names

        analysis = analyse(text)
        if analysis.problems:
            return _error(f"refused: {analysis.problems[0][1]}")
        unknown = unknown_names(analysis, names)
        if unknown:
            return _error(f"refused: {', '.join(unknown)} not bound")
        self.meter = 0
        try:
            activation = self.evaluation.Activation(
                annotations=self.env.annotations, package=self.env.package
            )
            value = self.metered(self.ast(text), activation=activation).evaluate(context)
            shown = to_json(value)
            size = len(json.dumps(shown, separators=(",", ":"), allow_nan=False).encode())
            if size > MAX_VALUE_BYTES:
                return _error(f"the value is {size} bytes, over {MAX_VALUE_BYTES >> 10} KiB")
            return {"ok": True, "value": shown}
        except MeterExceeded:
            return _error(
                f"over the {METER_LIMIT:,} step meter (AST nodes plus comprehension "
                "iterations); the evaluation was stopped"
            )
        except self.evaluation.CELEvalError as exc:
            return _error(_cel_error(exc))
        except RecursionError:
            return _error("the evaluation nests too deep")
        except MemoryError:
            return _error(f"over the {MEMORY_LIMIT_BYTES >> 20} MiB memory bound")
        except Exception as exc:  # cel-python raises plain Python errors for some overloads
            return _error(f"{type(exc).__name__}: {exc}")


def to_cel(value: Any, depth: int = 0) -> Any:
    """JSON as CEL values: what ``celpy.json_to_cel`` makes, built directly (it runs each
    scalar through its conversion machinery, ~20 us an item; this is ~1 us)."""
    if depth > MAX_DEPTH:
        raise ValueError(f"the value nests more than {MAX_DEPTH:,} deep")
    if value is None:
        return None
    if value is True or value is False:
        return celtypes.BoolType(value)
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ValueError("an integer outside the 64-bit range")
        return int.__new__(celtypes.IntType, value)
    if isinstance(value, float):
        return float.__new__(celtypes.DoubleType, value)
    if isinstance(value, str):
        return str.__new__(celtypes.StringType, value)
    if isinstance(value, list):
        return celtypes.ListType([to_cel(v, depth + 1) for v in value])
    if isinstance(value, dict):
        out = celtypes.MapType()
        dict.update(
            out,
            {str.__new__(celtypes.StringType, k): to_cel(v, depth + 1) for k, v in value.items()},
        )
        return out
    raise ValueError(f"a {type(value).__name__} is not a JSON value")


def to_json(value: Any, depth: int = 0) -> Any:
    """A CEL value as JSON; anything JSON cannot hold is an error, never a repr."""
    if depth > MAX_DEPTH:
        raise ValueError(f"the value nests more than {MAX_DEPTH:,} deep")
    if value is None:
        return None
    if isinstance(value, celtypes.BoolType | bool):
        return bool(value)
    if isinstance(value, celtypes.IntType | celtypes.UintType | int):
        return int(value)
    if isinstance(value, celtypes.DoubleType | float):
        number = float(value)
        if not math.isfinite(number):
            raise ValueError("the value is not a finite number")
        return number
    if isinstance(value, celtypes.StringType | str):
        return str(value)
    if isinstance(value, celtypes.ListType | list):
        return [to_json(v, depth + 1) for v in value]
    if isinstance(value, celtypes.MapType | dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, celtypes.StringType | str):
                raise ValueError("a map key is not a string (JSON keys are strings)")
            out[str(key)] = to_json(item, depth + 1)
        return out
    raise ValueError(f"a {type(value).__name__.removesuffix('Type').lower()} is not a JSON value")


def _cel_error(exc: Any) -> str:
    args: tuple[Any, ...] = tuple(getattr(exc, "args", ()))
    head = str(args[0]) if args else type(exc).__name__
    detail = args[2] if len(args) > 2 and args[2] else None
    return f"{head}" + (
        f" ({detail[0] if isinstance(detail, tuple | list) else detail})" if detail else ""
    )


def _error(message: str) -> dict[str, Any]:
    return {"ok": False, "value": None, "error": _short(message)}


def serve(engine: _Engine, stdin: BinaryIO, stdout: BinaryIO) -> None:
    write_message(stdout, {"ready": True})
    key: Any = None
    context: dict[str, Any] = {}
    names: set[str] = set()
    while True:
        request = read_message(stdin)
        if request is None:
            return
        if "bindings" in request:
            key, context, names = None, {}, set()  # the old values go before the new are built
            try:
                bindings = request.get("bindings") or {}
                context = engine.bind(bindings)
            except (Exception, RecursionError, MemoryError) as exc:
                write_message(stdout, {"accepted": False, "error": _short(f"bindings: {exc}")})
                continue
            key, names = request.get("key"), set(bindings)
        elif request.get("key") is None or request.get("key") != key:
            write_message(stdout, {"accepted": False, "error": "the bound values are gone"})
            continue
        write_message(stdout, {"accepted": True})
        for text in request.get("expressions") or []:
            outcome = engine.evaluate(str(text), context, names)
            try:
                write_message(stdout, outcome)
            except (ValueError, TypeError):  # not serializable after all (a NaN inside, ...)
                write_message(stdout, _error("the value is not JSON"))


def main() -> None:
    _die_with_parent()
    _limit_memory()
    logging.disable(logging.CRITICAL)  # cel-python logs arguments at error level: keep quiet
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # a stray print must not corrupt the protocol
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the worker decides when this process ends
    engine = _Engine()
    sys.setrecursionlimit(6000)  # after celpy's own 2,500; depth is validated to 32 anyway
    serve(engine, sys.stdin.buffer, protocol_out)


if __name__ == "__main__":
    main()
