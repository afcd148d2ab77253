"""What `python -c CODE` prints when a RUN computes a version or URL in Python.

`$(python3 -c "print('cu' + '${CUDA}'.replace('.', ''))")` is common in ML Dockerfiles. Only
a print of string operations on constants and `os.environ` is evaluated (`+`, f-strings,
indexing and slicing, `replace`, `split`, `join`, `strip`, `lower`/`upper`, `str`/`int`/`len`),
with the code's syntax read by `ast`; an import other than `os`/`sys`, a call of anything else,
or a name the code did not bind is unknown: None.
"""

from __future__ import annotations

import ast

from gpuship.lint.shellvalue import MAX_VALUE, Env


def python_value(code: str, env: Env) -> str | None:
    """What `python -c CODE` prints when CODE is `[import os/sys;] print(EXPRESSION)` and the
    expression takes string operations on constants and `os.environ`."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    if not tree.body or any(
        not isinstance(i, ast.Import) or any(a.name not in ("os", "sys") for a in i.names)
        for i in tree.body[:-1]
    ):
        return None
    last = tree.body[-1]
    call = last.value if isinstance(last, ast.Expr) else None
    if (
        not isinstance(call, ast.Call)
        or not isinstance(call.func, ast.Name)
        or call.func.id != "print"
        or call.keywords
    ):
        return None
    values = [_python(argument, env) for argument in call.args]
    if any(not isinstance(v, (str, int)) or isinstance(v, bool) for v in values):
        return None
    return " ".join(str(v) for v in values) + "\n"


_PyValue = str | int | list[str] | None


def _python(node: ast.expr, env: Env) -> _PyValue:
    """One expression of the subset: constants, `+`, f-strings, indexing and slicing, and
    the str methods that reshape versions."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)):
        return node.value if not isinstance(node.value, bool) else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.conversion != -1 or value.format_spec is not None:
                    return None
                part = _python(value.value, env)
            else:
                part = _python(value, env)
            if not isinstance(part, (str, int)):
                return None
            parts.append(str(part))
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _python(node.left, env), _python(node.right, env)
        if isinstance(left, str) and isinstance(right, str):
            return left + right if len(left) + len(right) <= MAX_VALUE else None
        if isinstance(left, int) and isinstance(right, int):
            return left + right
        return None
    if isinstance(node, ast.Subscript):
        return _subscript(node, env)
    if isinstance(node, ast.Call):
        return _python_call(node, env)
    return None


def _subscript(node: ast.Subscript, env: Env) -> _PyValue:
    if _is_environ(node.value):
        key = _python(node.slice, env)
        return env.get(key) if isinstance(key, str) else None
    value = _python(node.value, env)
    if not isinstance(value, (str, list)):
        return None
    if isinstance(node.slice, ast.Slice):
        bounds = [
            _python(b, env) if b is not None else None
            for b in (node.slice.lower, node.slice.upper, node.slice.step)
        ]
        if any(b is not None and not isinstance(b, int) for b in bounds):
            return None
        low, high, step = (b if isinstance(b, int) else None for b in bounds)
        return value[low:high:step] if step != 0 else None
    index = _python(node.slice, env)
    if not isinstance(index, int) or not -len(value) <= index < len(value):
        return None
    return value[index]


def _is_environ(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "environ"
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    )


def _python_call(node: ast.Call, env: Env) -> _PyValue:
    if node.keywords:
        return None
    arguments = [_python(a, env) for a in node.args]
    function = node.func
    if isinstance(function, ast.Name) and len(arguments) == 1:
        (argument,) = arguments
        if function.id == "str" and isinstance(argument, (str, int)):
            return str(argument)
        if function.id == "int" and isinstance(argument, str) and argument.strip().isdigit():
            return int(argument)
        if function.id == "len" and isinstance(argument, (str, list)):
            return len(argument)
        return None
    if not isinstance(function, ast.Attribute):
        return None
    if (_is_environ(function.value) and function.attr == "get") or (
        isinstance(function.value, ast.Name)
        and function.value.id == "os"
        and function.attr == "getenv"
    ):
        if not arguments or not isinstance(arguments[0], str) or len(arguments) > 2:
            return None
        value = env.get(arguments[0])
        if value is not None:
            return value
        return (arguments[1] if len(arguments) == 2 else None) if arguments[0] not in env else None
    target = _python(function.value, env)
    return _string_method(target, function.attr, arguments)


def _string_method(target: _PyValue, method: str, arguments: list[_PyValue]) -> _PyValue:
    if not isinstance(target, str) or any(a is None for a in arguments):
        return None
    if method == "join":
        if len(arguments) == 1 and isinstance(arguments[0], list):
            return target.join(arguments[0])
        return None
    texts = [a for a in arguments if isinstance(a, str)]
    if len(texts) != len(arguments):
        if method in ("split", "rsplit") and len(arguments) == 2 and isinstance(arguments[1], int):
            separator = arguments[0]
            if isinstance(separator, str):
                split = target.split if method == "split" else target.rsplit
                return split(separator, arguments[1])
        return None
    if method == "replace" and len(texts) == 2:
        return target.replace(texts[0], texts[1])
    if method in ("split", "rsplit") and len(texts) <= 1 and texts != [""]:
        separator = texts[0] if texts else None
        return target.split(separator) if method == "split" else target.rsplit(separator)
    if method in ("strip", "lstrip", "rstrip") and len(texts) <= 1:
        characters = texts[0] if texts else None
        stripped: str = getattr(target, method)(characters)
        return stripped
    if method in ("lower", "upper") and not texts:
        return target.lower() if method == "lower" else target.upper()
    return None
