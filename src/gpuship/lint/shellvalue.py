"""What a shell word evaluates to when the Dockerfile alone decides it.

RUN lines compute versions and URLs from build args in the shell: `${CUDA_VERSION//./}`,
`CU=$(echo $CUDA_VERSION | tr -d .)`, `$(python3 -c "print('cu' + '${CUDA}'.replace('.', ''))")`.
Read as written, such a word is unknown, and the `torch==2.6.0+cu121` it builds is never judged.
This reader evaluates what a build arg decides: quoting, parameter expansion (`${X:-d}`,
`${X//a/b}`, `${X%.*}`, `${X#*.}`, `${X:0:2}`, `${#X}`), and command substitution of
`echo`/`printf` piped through `tr`, `sed s///`, `cut`, `awk '{print $1}'` or `xargs`, or of a
`python -c` that prints string operations on constants and `os.environ`. Anything else (a file,
the network, another program, arithmetic) is unknown: None, never a guess. Values are bounded
(`MAX_VALUE`), so a hostile word cannot grow without limit.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping

Env = Mapping[str, "str | None"]

MAX_VALUE = 4096  # characters: longer values are unknown (no version or URL is this long)
_MAX_DEPTH = 4  # nested substitutions followed
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARAMETER = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(.*)$", re.DOTALL)
_PYTHON = re.compile(r"^python[0-9.]*$")
# Characters that end a word in a command substitution, or make it more than one pipeline.
_CONTROL = frozenset(";&<>\n")


def word_value(raw: str, env: Env, depth: int = 0) -> str | None:
    """The value of one shell word as written (quotes included), or None when unknown."""
    found = _scan(raw, 0, env, depth, quoted=False)
    return None if found is None else found[0]


def _scan(raw: str, index: int, env: Env, depth: int, *, quoted: bool) -> tuple[str, int] | None:
    """The value from `index` to the end of the word, or (`quoted`) to the closing `"`, with
    the offset past it; None when unknown or longer than MAX_VALUE."""
    out: list[str] = []
    size = 0
    while index < len(raw):
        char = raw[index]
        found: tuple[str, int] | None
        if quoted and char == '"':
            return "".join(out), index + 1
        if char == "`":
            return None  # backquotes: a command substitution this reader does not follow
        if char == "$":
            found = _dollar(raw, index, env, depth)
        elif char == "\\" and (not quoted or raw[index + 1 : index + 2] in ('"', "$", "`", "\\")):
            found = raw[index + 1 : index + 2], index + 2
        elif char == "'" and not quoted:
            close = raw.find("'", index + 1)
            found = (raw[index + 1 : close], close + 1) if close >= 0 else None
        elif char == '"' and not quoted:
            found = _scan(raw, index + 1, env, depth, quoted=True)
        else:
            found = char, index + 1
        if found is None:
            return None
        piece, index = found
        out.append(piece)
        size += len(piece)
        if size > MAX_VALUE:
            return None
    return None if quoted else ("".join(out), index)  # a `"` never closed: unknown


def _dollar(raw: str, index: int, env: Env, depth: int) -> tuple[str, int] | None:
    """The expansion starting at `raw[index] == "$"` and the offset past it."""
    following = raw[index + 1 : index + 2]
    if raw.startswith("$((", index):
        return None  # arithmetic
    if following == "(":
        close = _closing(raw, index + 1, "(", ")")
        if close is None or depth >= _MAX_DEPTH:
            return None
        value = substitution(raw[index + 2 : close], env, depth + 1)
        return None if value is None else (value, close + 1)
    if following == "{":
        close = _closing(raw, index + 1, "{", "}")
        if close is None:
            return None
        value = _parameter(raw[index + 2 : close], env, depth)
        return None if value is None else (value, close + 1)
    name = _NAME.match(raw, index + 1)
    if name is None:
        # `$1`, `$@`, `$?`: decided when the build runs; a `$` before nothing is literal.
        return ("$", index + 1) if not following or following in " /:.-" else None
    value = env.get(name.group())
    return None if value is None else (value, name.end())


def _closing(raw: str, index: int, opening: str, closing: str) -> int | None:
    """The offset of the bracket closing the one at `index`, quotes respected."""
    depth = 0
    quote = ""
    position = index
    while position < len(raw):
        char = raw[position]
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"':
                position += 1
        elif char in "'\"":
            quote = char
        elif char == "\\":
            position += 1
        elif char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return position
        position += 1
    return None


def _parameter(body: str, env: Env, depth: int) -> str | None:
    """`${body}`: a variable with bash's defaults, alternatives, trims, replacements and
    substrings."""
    if body.startswith("#") and _NAME.fullmatch(body[1:]):
        value = env.get(body[1:])
        return None if value is None else str(len(value))
    match = _PARAMETER.match(body)
    if match is None:
        return None
    name, operation = match.groups()
    value = env.get(name)
    if not operation:
        return value

    def word(text: str) -> str | None:
        return word_value(text, env, depth)

    for prefix in (":-", "-", ":=", "="):
        if operation.startswith(prefix):
            empty = value is None or (prefix.startswith(":") and value == "")
            return word(operation[len(prefix) :]) if empty else value
    for prefix in (":+", "+"):
        if operation.startswith(prefix):
            if value is None:
                return None if name in env else ""
            if prefix == ":+" and value == "":
                return ""
            return word(operation[len(prefix) :])
    if value is None or len(value) > 256:
        return None
    return _operation(value, operation, word)


def _operation(value: str, operation: str, word: Callable[[str], str | None]) -> str | None:
    """A trim (`#`, `##`, `%`, `%%`), replacement (`/`, `//`, `/#`, `/%`), substring (`:n:m`)
    or case change (`^^`, `,,`) of a known value."""
    if operation == "^^":
        return value.upper()
    if operation == ",,":
        return value.lower()
    for prefix, longest, from_end in (("##", True, False), ("#", False, False)):
        if operation.startswith(prefix):
            pattern = word(operation[len(prefix) :])
            return None if pattern is None else _trim(value, pattern, longest, from_end)
    for prefix, longest, from_end in (("%%", True, True), ("%", False, True)):
        if operation.startswith(prefix):
            pattern = word(operation[len(prefix) :])
            return None if pattern is None else _trim(value, pattern, longest, from_end)
    if operation.startswith("/"):
        return _replace(value, operation[1:], word)
    substring = re.fullmatch(r":\s*(\d+)(?::\s*(\d+))?", operation)
    if substring:
        start = int(substring.group(1))
        length = substring.group(2)
        return value[start:] if length is None else value[start : start + int(length)]
    return None


def _trim(value: str, pattern: str, longest: bool, from_end: bool) -> str:
    """`${X#p}` (shortest prefix), `${X##p}`, `${X%p}` (shortest suffix), `${X%%p}`."""
    sizes = range(len(value), -1, -1) if longest else range(len(value) + 1)
    for size in sizes:
        part = value[len(value) - size :] if from_end else value[:size]
        if fnmatch.fnmatchcase(part, pattern):
            return value[: len(value) - size] if from_end else value[size:]
    return value


def _replace(value: str, spec: str, word: Callable[[str], str | None]) -> str | None:
    """`${X/p/r}`, `${X//p/r}` (every match), `${X/#p/r}` (at the start), `${X/%p/r}` (at the
    end); each match is the longest, as bash takes it."""
    every = spec.startswith("/")
    anchor = spec[0] if spec[:1] in ("#", "%") else ""
    spec = spec[1:] if every or anchor else spec
    pattern_text, _, replacement_text = spec.partition("/")
    pattern = word(pattern_text)
    replacement = word(replacement_text)
    if pattern is None or replacement is None or not pattern:
        return None
    out: list[str] = []
    index = 0
    replaced = False
    while index < len(value):
        if (replaced and not every) or (anchor == "#" and index > 0):
            out.append(value[index:])
            break
        end = _longest_match(value, index, pattern, anchor == "%")
        if end is None:
            out.append(value[index])
            index += 1
            continue
        out.append(replacement)
        index = end
        replaced = True
    return "".join(out)


def _longest_match(value: str, start: int, pattern: str, to_end: bool) -> int | None:
    """The end of the longest match of `pattern` at `start` (only one reaching the end when
    `to_end`), or None."""
    ends = [len(value)] if to_end else range(len(value), start, -1)
    for end in ends:
        if end > start and fnmatch.fnmatchcase(value[start:end], pattern):
            return end
    return None


def substitution(script: str, env: Env, depth: int = 0) -> str | None:
    """The output of `$(script)`, trailing newlines removed, for the pipelines this reader
    knows: a producer (`echo`, `printf`, `python -c`) and filters (`tr`, `sed`, `cut`, `awk`,
    `xargs`)."""
    stages = _pipeline(script)
    if not stages:
        return None
    words = [[word_value(raw, env, depth) for raw in stage] for stage in stages]
    if any(value is None for stage in words for value in stage):
        return None
    commands = [[value for value in stage if value is not None] for stage in words]
    output = _produce(commands[0], env)
    for command in commands[1:]:
        if output is None:
            return None
        output = _filter(command, output)
    if output is None or len(output) > MAX_VALUE:
        return None
    return output.rstrip("\n")


def _pipeline(script: str) -> list[list[str]] | None:
    """The raw words of each command of a single pipeline, or None for anything else (lists,
    redirects, subshells, background jobs)."""
    stages: list[list[str]] = [[]]
    word: list[str] = []
    index = 0
    while index < len(script):
        char = script[index]
        if char in " \t|":
            if char == "|" and (script.startswith("||", index) or (not word and not stages[-1])):
                return None
            if word:
                stages[-1].append("".join(word))
                word = []
            if char == "|":
                stages.append([])
            index += 1
            continue
        if char in _CONTROL or char in "()`":
            return None
        end = _word_part_end(script, index)
        if end is None:
            return None
        word.append(script[index : end + 1])
        index = end + 1
    if word:
        stages[-1].append("".join(word))
    return stages if all(stages) else None


def _word_part_end(script: str, index: int) -> int | None:
    """The index of the last character of the word part at `index`: a quoted string, an
    escaped character, a `$(...)` or one plain character; None when it is not closed."""
    char = script[index]
    if char in "'\"":
        return quote_end(script, index)
    if char == "\\" and index + 1 < len(script):
        return index + 1
    if char == "$" and script.startswith("$(", index):
        return _closing(script, index + 1, "(", ")")
    return index


def quote_end(script: str, start: int) -> int | None:
    """The index of the quote closing the one at `start` (`\\` escapes inside `"`), or None."""
    quote = script[start]
    index = start + 1
    while index < len(script):
        if script[index] == quote:
            return index
        index += 2 if script[index] == "\\" and quote == '"' else 1
    return None


def _produce(argv: list[str], env: Env) -> str | None:
    """The output of the first command of the pipeline."""
    name = argv[0].rsplit("/", 1)[-1]
    arguments = argv[1:]
    if name == "echo":
        newline = "\n"
        while arguments and arguments[0] in ("-n", "-e", "-E"):
            if arguments[0] == "-n":
                newline = ""
            elif arguments[0] == "-e" and any("\\" in a for a in arguments[1:]):
                return None
            arguments = arguments[1:]
        return " ".join(arguments) + newline
    if name == "printf" and arguments:
        return _printf(arguments[0], arguments[1:])
    if _PYTHON.match(name) and len(arguments) == 2 and arguments[0] == "-c":
        # Imported here: `ast` costs more than the rest of this module, and few RUNs compute
        # a version in Python.
        from gpuship.lint.pyvalue import python_value

        return python_value(arguments[1], env)
    return None


def _printf(template: str, arguments: list[str]) -> str | None:
    """`printf '%s.%s' a b`: `%s` and `%%` only, each argument used once."""
    pieces = re.split(r"(%%|%s|\\n)", template)
    out: list[str] = []
    remaining = list(arguments)
    for piece in pieces:
        if piece == "%s":
            out.append(remaining.pop(0) if remaining else "")
        elif piece == "%%":
            out.append("%")
        elif piece == "\\n":
            out.append("\n")
        elif "%" in piece or "\\" in piece:
            return None
        else:
            out.append(piece)
    return None if remaining else "".join(out)


def _filter(argv: list[str], text: str) -> str | None:
    """What one filter of the pipeline writes for `text`."""
    name = argv[0].rsplit("/", 1)[-1]
    arguments = argv[1:]
    if name == "tr":
        return _tr(arguments, text)
    if name == "xargs" and not arguments:
        return " ".join(text.split()) + "\n"
    by_line = {"sed": _sed, "cut": _cut, "awk": _awk}.get(name)
    if by_line is None:
        return None
    # Line filters: each line without its newline (a last newline ends the last line).
    ended = text.endswith("\n")
    lines = (text[:-1] if ended else text).split("\n")
    out = by_line(arguments, lines)
    return None if out is None else "\n".join(out) + ("\n" if ended else "")


def _characters(spec: str) -> str | None:
    """A `tr` set: characters and `a-z` ranges (classes such as `[:digit:]` are unknown)."""
    if "[:" in spec or "\\" in spec:
        return None
    out: list[str] = []
    index = 0
    while index < len(spec):
        if index + 2 < len(spec) and spec[index + 1] == "-":
            low, high = ord(spec[index]), ord(spec[index + 2])
            if high < low:
                return None
            out.extend(chr(c) for c in range(low, high + 1))
            index += 3
        else:
            out.append(spec[index])
            index += 1
    return "".join(out)


def _tr(arguments: list[str], text: str) -> str | None:
    if len(arguments) == 2 and arguments[0] == "-d":
        deleted = _characters(arguments[1])
        return None if deleted is None else text.translate({ord(c): None for c in deleted})
    if len(arguments) == 2 and not arguments[0].startswith("-"):
        source, target = _characters(arguments[0]), _characters(arguments[1])
        if not source or not target:
            return None
        target = target + target[-1] * (len(source) - len(target))
        return text.translate(str.maketrans(source, target[: len(source)]))
    return None


def _sed(arguments: list[str], lines: list[str]) -> list[str] | None:
    """`sed [-E|-r] [-e] 's/RE/REPLACEMENT/[g]'`, line by line."""
    extended = False
    scripts: list[str] = []
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        if argument in ("-E", "-r"):
            extended = True
        elif argument == "-e" and index + 1 < len(arguments):
            index += 1
            scripts.append(arguments[index])
        elif argument.startswith("-"):
            return None
        else:
            scripts.append(argument)
        index += 1
    if len(scripts) != 1:
        return None
    command = _sed_substitution(scripts[0], extended)
    if command is None:
        return None
    pattern, replacement, count = command
    return [pattern.sub(replacement, line, count=count) for line in lines]


def _sed_substitution(script: str, extended: bool) -> tuple[re.Pattern[str], str, int] | None:
    if len(script) < 4 or script[0] != "s":
        return None
    delimiter = script[1]
    parts = re.split(rf"(?<!\\){re.escape(delimiter)}", script[2:])
    if len(parts) != 3 or parts[2] not in ("", "g"):
        return None
    expression = parts[0] if extended else _basic_to_python(parts[0])
    if expression is None:
        return None
    try:
        pattern = re.compile(expression)
    except re.error:
        return None
    replacement = re.sub(r"\\(\d)", r"\\\1", parts[1]).replace("&", r"\g<0>")
    if re.search(r"\\[^\d\\g]", replacement):
        return None
    return pattern, replacement, 0 if parts[2] == "g" else 1


def _basic_to_python(expression: str) -> str | None:
    """A POSIX basic regular expression as Python's: `\\(`/`\\)` group, `+ ? | { } ( )` are
    literal; intervals and back-references are left unknown."""
    out: list[str] = []
    index = 0
    while index < len(expression):
        char = expression[index]
        if char == "\\" and index + 1 < len(expression):
            following = expression[index + 1]
            if following in "()":
                out.append(following)
            elif following in "{}" or following.isdigit():
                return None
            else:
                out.append("\\" + following)
            index += 2
            continue
        out.append("\\" + char if char in "+?|{}()" else char)
        index += 1
    return "".join(out)


def _field_list(spec: str, count: int) -> list[int] | None:
    """`cut -f`'s list (`1`, `1,2`, `2-`, `-2`, `1-3`) as 0-based indexes."""
    found: list[int] = []
    for part in spec.split(","):
        low, dash, high = part.partition("-")
        if not dash:
            if not low.isdigit() or int(low) < 1:
                return None
            found.append(int(low) - 1)
            continue
        start = int(low) if low.isdigit() else 1
        end = int(high) if high.isdigit() else count
        if (low and not low.isdigit()) or (high and not high.isdigit()) or start < 1:
            return None
        found.extend(range(start - 1, min(end, count)))
    return found


def _cut(arguments: list[str], lines: list[str]) -> list[str] | None:
    """`cut -d. -f1,2` (also `-d .`, `-f 1`) and `cut -c1-4`, line by line."""
    delimiter = "\t"
    fields: str | None = None
    characters: str | None = None
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        for flag in ("-d", "-f", "-c"):
            if argument.startswith(flag):
                value = argument[2:]
                if not value and index + 1 < len(arguments):
                    index += 1
                    value = arguments[index]
                if flag == "-d":
                    delimiter = value
                elif flag == "-f":
                    fields = value
                else:
                    characters = value
                break
        else:
            return None
        index += 1
    if len(delimiter) != 1 or (fields is None) == (characters is None):
        return None
    out = []
    for line in lines:
        if characters is not None:
            chosen = _field_list(characters, len(line))
            if chosen is None:
                return None
            out.append("".join(line[i] for i in chosen if i < len(line)))
            continue
        assert fields is not None
        parts = line.split(delimiter)
        if len(parts) == 1:
            out.append(line)  # no delimiter: cut prints the line whole
            continue
        chosen = _field_list(fields, len(parts))
        if chosen is None:
            return None
        out.append(delimiter.join(parts[i] for i in chosen if i < len(parts)))
    return out


def _awk(arguments: list[str], lines: list[str]) -> list[str] | None:
    """`awk -F. '{print $1 $2}'` (also `$1"."$2`, `$1, $2`): fields and strings printed."""
    separator: str | None = None
    program: str | None = None
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        if argument.startswith("-F"):
            separator = argument[2:]
            if not separator and index + 1 < len(arguments):
                index += 1
                separator = arguments[index]
        elif program is None and not argument.startswith("-"):
            program = argument
        else:
            return None
        index += 1
    match = re.fullmatch(r"\s*\{\s*print\s+(.*?)\s*;?\s*\}\s*", program or "")
    if match is None or (separator is not None and len(separator) != 1):
        return None
    items = re.findall(r'\$(\d+)|"([^"\\]*)"|(,)|(\s+)|(.)', match.group(1))
    out = []
    for line in lines:
        fields = line.split(separator) if separator not in (None, " ") else line.split()
        printed: list[str] = []
        for field, literal, comma, _space, other in items:
            if other:
                return None
            if field:
                number = int(field)
                printed.append(
                    line if number == 0 else (fields[number - 1] if number <= len(fields) else "")
                )
            elif comma:
                printed.append(" ")
            elif literal:
                printed.append(literal)
        out.append("".join(printed))
    return out
