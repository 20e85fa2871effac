"""The catalogue of generic terms (`robolearn terms`), read from robolearn.mdp.TERMS itself.

Each entry's kind comes from the term's declaration (robolearn/mdp/kinds.py), its params from its
signature (a class term: its __init__) and its summary from its docstring's first paragraph, so
the listing always says what the code does.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from robolearn.mdp.kinds import KINDS, kinds_of

WIDTH = 100
"""Columns the listing is wrapped to."""
OTHER = "other"
"""The group of a term that declares no kind (the catalogue test fails on it)."""
SECTIONS = {"observation": "observations", "reward": "rewards", "termination": "terminations",
            "event": "events", "curriculum": "curriculum", "metric": "metrics"}  # fmt: skip
"""The task YAML section that names terms of each kind (observations: under a group's terms:)."""


@dataclass(frozen=True)
class TermEntry:
    name: str
    """The name a task YAML gives as `func:`."""
    kinds: tuple[str, ...]
    """Of observation, reward, termination, event, curriculum, metric; (OTHER,) if undeclared."""
    params: tuple[str, ...]
    """The YAML params, rendered `name: annotation = default`, in signature order."""
    required: tuple[str, ...]
    """Names of the params without a default."""
    summary: str
    """The docstring's first paragraph, on one line."""
    doc: str
    """The whole docstring."""
    stateful: bool
    """A class term: built once with its params, keeps state between calls."""
    module: str
    """Where it is defined."""

    @property
    def kind(self) -> str:
        """The first (main) kind."""
        return self.kinds[0]

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(self.params)})"


def _annotation(annotation) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    return re.sub(r"\b(?:[a-z_][a-z0-9_]*\.)+(?=[A-Za-z_])", "", text).replace("typing.", "")


def _value(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, float):
        text = repr(value)
        return text if len(text) <= 8 else format(value, ".6g")
    return repr(value)


def _param(p: inspect.Parameter) -> str:
    text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
    annotation = _annotation(p.annotation)
    if annotation:
        text += f": {annotation}"
    if p.default is not inspect.Parameter.empty:
        text += f" = {_value(p.default)}" if annotation else f"={_value(p.default)}"
    return text


def yaml_params(term: Callable) -> list[inspect.Parameter]:
    """The params a task YAML gives a term: those after `env` (and an event's or curriculum's
    `mask`); for a class term, those of its __init__ (after self and env)."""
    target = term.__init__ if inspect.isclass(term) else term
    params = list(inspect.signature(target).parameters.values())
    params = params[2:] if inspect.isclass(term) else params[1:]  # self, env / env
    if params and params[0].name == "mask" and not inspect.isclass(term):
        params = params[1:]
    return params


def entry(name: str, term: Callable) -> TermEntry:
    doc = inspect.cleandoc(term.__doc__ or "")
    summary = " ".join(doc.split("\n\n")[0].split())
    params = yaml_params(term)
    required = tuple(p.name for p in params if p.default is inspect.Parameter.empty
                     and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))  # fmt: skip
    return TermEntry(name, kinds_of(term) or (OTHER,), tuple(_param(p) for p in params), required, summary, doc,
                     inspect.isclass(term), term.__module__)  # fmt: skip


def catalog(terms: Mapping[str, Callable] | None = None) -> list[TermEntry]:
    """Every term (default: robolearn.mdp.TERMS), grouped by kind in KINDS order, by name within."""
    if terms is None:
        from robolearn.mdp import TERMS as terms
    order = [*KINDS, OTHER]
    entries = [entry(name, term) for name, term in terms.items()]
    return sorted(entries, key=lambda e: (order.index(e.kind) if e.kind in order else len(order), e.name))


def parse_kind(value: str) -> str:
    """A kind, also given as its YAML section's name (`rewards`); ValueError names the valid ones."""
    for kind, section in SECTIONS.items():
        if value in (kind, section):
            return kind
    raise ValueError(f"unknown kind '{value}'; valid: {', '.join(KINDS)}")


def _wrap(text: str, indent: int, width: int) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=" " * indent, subsequent_indent=" " * indent,
                         break_on_hyphens=False) or [""]  # fmt: skip


def _signature_lines(e: TermEntry, indent: int, width: int) -> list[str]:
    """`name(a, b, ...)` wrapped after commas, continuation lines aligned after the parenthesis."""
    head = " " * indent + e.name + "("
    tail = ")" + ("  [stateful class]" if e.stateful else "")
    pieces = [p + "," for p in e.params[:-1]] + list(e.params[-1:])
    lines, line, fresh = [], head, True
    for k, piece in enumerate(pieces):
        text = piece if fresh else " " + piece
        end = tail if k == len(pieces) - 1 else ""
        if not fresh and len(line + text + end) > width:
            lines.append(line)
            line, text = " " * len(head), piece
        line, fresh = line + text, False
    return lines + [line + tail]


def format_catalog(entries: list[TermEntry], width: int = WIDTH) -> str:
    """Terms grouped by kind: a header with the kind's call contract, then per term its signature
    and, indented below it, its summary."""
    out: list[str] = []
    for kind in [*KINDS, OTHER]:
        group = [e for e in entries if kind in e.kinds]
        if not group:
            continue
        if out:
            out.append("")
        contract = KINDS.get(kind, "terms that declare no kind (robolearn/mdp/kinds.py)")
        out += _wrap(f"{kind} terms ({len(group)}): {contract}", 0, width)
        for e in group:
            out += _signature_lines(e, 2, width)
            out += _wrap(e.summary or "(no docstring)", 6, width)
    out += ["", "`robolearn terms <name>` shows one term's whole docstring and how a task YAML names it."]
    return "\n".join(out) + "\n"


def yaml_example(e: TermEntry, kind: str) -> str:
    """How a task YAML names the term as a `kind` term, its required params as placeholders."""
    lines = [f"func: {e.name}"]
    lines += {"reward": ["weight: 1.0"], "event": ["mode: reset  # or startup, interval"]}.get(kind, [])
    if e.required:
        lines.append("params: {" + ", ".join(f"{p}: <{p}>" for p in e.required) + "}")
    if kind == "observation":
        head, indent = ["observations:", "  policy:", "    terms:", f"      {e.name}:"], 8
    else:
        head, indent = [f"{SECTIONS.get(kind, kind)}:", f"  {e.name}:"], 4
    return "\n".join(head + [" " * indent + line for line in lines])


def format_term(e: TermEntry, width: int = WIDTH) -> str:
    """One term in full: kind, signature, docstring, where it lives and how a task YAML names it."""
    out = [f"{e.name}: {' and '.join(e.kinds)} term{' (a stateful class)' if e.stateful else ''}, {e.module}"]
    for kind in e.kinds:
        out += _wrap(f"{kind}: {KINDS[kind]}", 2, width) if kind in KINDS else []
    out += ["", *_signature_lines(e, 2, width), ""]
    out += ["  " + line if line else "" for line in (e.doc or "(no docstring)").splitlines()]
    for kind in e.kinds:
        out += ["", f"in a task YAML{f' (as a {kind} term)' if len(e.kinds) > 1 else ''}:",
                textwrap.indent(yaml_example(e, kind), "  ")]  # fmt: skip
    return "\n".join(out) + "\n"


def find(entries: list[TermEntry], name: str) -> TermEntry:
    """The entry named `name`; ValueError with the closest names (or all of them)."""
    for e in entries:
        if e.name == name:
            return e
    import difflib

    names = [e.name for e in entries]
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.6)
    if close:
        raise ValueError(f"unknown term '{name}'; did you mean: {', '.join(close)}? (`robolearn terms` lists all)")
    raise ValueError(f"unknown term '{name}'; valid: {', '.join(sorted(names))}")
