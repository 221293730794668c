"""Every error code the code base can raise, found by reading its source (``ast``), not running it.

A code is *raised* where a string reaches a code position:

- the ``code`` argument (by position or keyword) of a coded error's constructor:
  ``PonderError`` and every class below it, ``CodedError`` and its subclasses (``PlanError``,
  ``CampaignError``), and what the CLI and MCP show (``Failure``, ``ToolFailure``); a class whose
  own ``__init__`` takes no ``code`` (``ProviderError(message)``) sets it itself;
- ``type=`` of an ``ApplicationError`` (the code a run fails with, or an update is refused with);
- ``code = ...`` or ``error_type = ...`` assigned anywhere (a class's fixed code);
- the first of a ``(code, message)`` pair a function returns (annotated ``tuple[str, str]``);
- an argument of a function that hands its ``code`` parameter on to a position above (found to a
  fixed point, so ``def bad(code, message): raise ConfigError(code, message)`` makes the first
  argument of every ``bad(...)`` call a code position).

A string is read from a literal, or from a module constant followed through ``from X import
NAME`` to its module; ``Reason.X`` is the plan reason's value. Anything computed (an f-string, a
variable) is skipped: it forwards a code that was raised, and so found, elsewhere.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from workflows.plan.reasons import Reason

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("workflows", "activities", "client", "worker")
ROOTS = {"PonderError": 0, "CodedError": 0, "Failure": 0, "ToolFailure": 0}
"""The classes that carry a code, with the position of ``code`` among their arguments."""


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    constants: dict[str, str] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)
    """A name bound by ``from X import Y [as name]``: (X, Y)."""
    functions: set[str] = field(default_factory=set)
    """Every function and method defined here, by name."""
    methods: set[str] = field(default_factory=set)
    """The methods alone (defined in a class)."""


def modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Module]:
    found: dict[str, Module] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            module = Module(name, path, ast.parse(path.read_text(), str(path)))
            for node in ast.walk(module.tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    module.functions.add(node.name)
                if isinstance(node, ast.ClassDef):
                    module.methods |= {
                        f.name
                        for f in node.body
                        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                    }
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    for alias in node.names:
                        module.imports[alias.asname or alias.name] = (node.module, alias.name)
            for node in module.tree.body:
                target, value = _assignment(node)
                if isinstance(target, ast.Name) and _literal(value) is not None:
                    module.constants[target.id] = _literal(value)  # type: ignore[assignment]
            found[name] = module
    return found


def _assignment(node: ast.AST) -> tuple[ast.expr | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return node.targets[0], node.value
    if isinstance(node, ast.AnnAssign):
        return node.target, node.value
    return None, None


def _literal(value: ast.expr | None) -> str | None:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    return None


def _called(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def error_classes(found: dict[str, Module]) -> dict[str, int | None]:
    """Every class that carries a code (``ROOTS`` and what derives from them, by name), with the
    position of its constructor's ``code`` argument (-1: keyword only; None: it takes none)."""
    bases: dict[str, list[str]] = {}
    inits: dict[str, int | None] = {}
    for module in found.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef) and node.name not in ROOTS:
                bases[node.name] = [
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                ]
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                        slot = _parameter(item, "code")
                        inits[node.name] = None if slot is None else slot[0]
    coded: dict[str, int | None] = dict(ROOTS)
    while grown := {c for c, b in bases.items() if c not in coded and set(b) & set(coded)}:
        for name in sorted(grown):
            parent = next(b for b in bases[name] if b in coded)
            coded[name] = inits[name] if name in inits else coded[parent]
    return coded


class Resolver:
    def __init__(self, found: dict[str, Module]) -> None:
        self.found = found

    def values(self, module: Module, node: ast.expr) -> set[str]:
        if (text := _literal(node)) is not None:
            return {text}
        if isinstance(node, ast.Name):
            return self._name(module, node.id, depth=0)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.attr in Reason.__members__
            and self._is_reason(module, node.value.id)
        ):
            return {Reason[node.attr].value}
        return set()

    def _is_reason(self, module: Module, name: str) -> bool:
        if name == "Reason" or module.imports.get(name, ("", ""))[1] == "Reason":
            return True
        return name == "R" and module.name == "workflows.plan.reasons"

    def _name(self, module: Module, name: str, depth: int) -> set[str]:
        if name in module.constants:
            return {module.constants[name]}
        source = module.imports.get(name)
        if source is None or depth > 10 or source[0] not in self.found:
            return set()
        return self._name(self.found[source[0]], source[1], depth + 1)


@dataclass(frozen=True)
class Raised:
    code: str
    where: str


@cache
def raised_codes(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> tuple[Raised, ...]:
    found = modules(root, packages)
    coded = error_classes(found)
    resolve = Resolver(found)
    # Each statement or call once, with its function and class: only these can hold a code.
    sites = [
        (module, function, node, _super_of(node, cls, coded))
        for module in found.values()
        for function, cls, node in _walk(module.tree)
        if isinstance(node, ast.Call | ast.Return | ast.Assign | ast.AnnAssign)
    ]
    methods: dict[str, set[str]] = {}
    for module in found.values():
        for method in module.methods:
            methods.setdefault(method, set()).add(module.name)
    # (module, function) -> (positional index, keyword) of its ``code`` parameter
    forwarders: dict[tuple[str, str], set[tuple[int, str]]] = {}
    raised: set[Raised] = set()
    for _ in range(10):  # forwarders of forwarders, to a fixed point
        before = (len(raised), sum(len(v) for v in forwarders.values()))
        for module, function, node, parent in sites:
            slots = _forwarded(module, node, forwarders, methods)
            for expr in _code_positions(node, coded, slots, function, parent):
                for code in resolve.values(module, expr):
                    where = f"{module.path.relative_to(root)}:{expr.lineno}"
                    raised.add(Raised(code, where))
                if function is not None and isinstance(expr, ast.Name) and expr.id == "code":
                    slot = _parameter(function, "code")
                    if slot is not None:
                        key = (module.name, function.name)
                        forwarders.setdefault(key, set()).add(slot)
        if (len(raised), sum(len(v) for v in forwarders.values())) == before:
            break
    return tuple(sorted(raised, key=lambda r: (r.code, r.where)))


def _super_of(node: ast.AST, cls: ast.ClassDef | None, coded: dict[str, int | None]) -> str | None:
    """The coded base class a ``super().__init__(...)`` call in a coded class constructs."""
    if cls is None or cls.name not in coded or not isinstance(node, ast.Call):
        return None
    func = node.func
    is_super = (
        isinstance(func, ast.Attribute)
        and func.attr == "__init__"
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    )
    if not is_super:
        return None
    bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in cls.bases]
    return next((b for b in bases if b in coded), None)


def _forwarded(
    module: Module,
    node: ast.AST,
    forwarders: dict[tuple[str, str], set[tuple[int, str]]],
    methods: dict[str, set[str]],
) -> set[tuple[int, str]]:
    """Where a call to a forwarding function passes its code: a plain name is looked up where it
    is defined (this module, or the one it is imported from), ``self.f``/``cls.f`` in this module
    if it defines one (else, like any other ``obj.f``, by name in every module)."""
    if not isinstance(node, ast.Call):
        return set()
    func = node.func
    if isinstance(func, ast.Name):
        source = module.imports.get(func.id, (module.name, func.id))
        return forwarders.get(source, set())
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            if func.attr in module.functions:
                return forwarders.get((module.name, func.attr), set())
            owners = methods.get(func.attr, set())  # a mixin's method, defined beside its class
            return set().union(*(forwarders.get((m, func.attr), set()) for m in owners))
        return set().union(*(v for (_, name), v in forwarders.items() if name == func.attr))
    return set()


Function = ast.FunctionDef | ast.AsyncFunctionDef


def _walk(
    tree: ast.AST, function: Function | None = None, cls: ast.ClassDef | None = None
) -> Iterator[tuple[Function | None, ast.ClassDef | None, ast.AST]]:
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _walk(child, child, cls)
        elif isinstance(child, ast.ClassDef):
            yield from _walk(child, None, child)
        else:
            yield function, cls, child
            yield from _walk(child, function, cls)


def _parameter(
    function: ast.FunctionDef | ast.AsyncFunctionDef, name: str
) -> tuple[int, str] | None:
    positional = [*function.args.posonlyargs, *function.args.args]
    offset = 1 if positional and positional[0].arg in ("self", "cls") else 0
    for index, arg in enumerate(positional):
        if arg.arg == name:
            return index - offset, name
    if any(arg.arg == name for arg in function.args.kwonlyargs):
        return -1, name
    return None


def _code_positions(
    node: ast.AST,
    coded: dict[str, int | None],
    forwarded: set[tuple[int, str]],
    function: ast.FunctionDef | ast.AsyncFunctionDef | None,
    parent: str | None,
) -> Iterator[ast.expr]:
    if isinstance(node, ast.Call):
        name = parent or _called(node)
        if name in coded:
            index = coded[name]
            if index is not None and 0 <= index < len(node.args):
                yield node.args[index]
            yield from (kw.value for kw in node.keywords if kw.arg == "code")
        elif name == "ApplicationError":
            yield from (kw.value for kw in node.keywords if kw.arg == "type")
        for index, keyword in sorted(forwarded):
            if 0 <= index < len(node.args):
                yield node.args[index]
            yield from (kw.value for kw in node.keywords if kw.arg == keyword)
    elif isinstance(node, ast.Return) and function is not None and function.returns is not None:
        pair = isinstance(node.value, ast.Tuple) and len(node.value.elts) == 2
        if pair and ast.unparse(function.returns) == "tuple[str, str]":
            yield node.value.elts[0]  # type: ignore[union-attr]
    else:
        target, value = _assignment(node)
        named = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
        if named in ("code", "error_type") and value is not None:
            yield value
