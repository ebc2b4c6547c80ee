#!/usr/bin/python3
"""Doc lint: no sentence may call a flag refused while `trove -h` lists it.

Run by tools/lint/run.sh (docs/STYLE.md section 8); prints the offending
sentences and exits 1, prints nothing and exits 0 when the docs agree with
the help text. Needs no build: the flags come from the raw string(s) of
HelpText() in src/server/config.cc, the text `trove -h` prints.

What counts as a flag the help lists:
  - a short flag that starts a help line (`-U, --udp-port=<num>` gives -U);
  - every long flag written anywhere in the help (--udp-port, --resp-port,
    --max-connections ...);
  - every name in the `-o` list (maxconns_fast, hashpower, proxy_config ...).

What counts as a doc sentence calling a flag refused: a sentence of README.md
or docs/**/*.md that contains, outside backticks, one of the words
"refused", "rejected", "not supported", "unsupported", "not accepted",
"isn't supported", "aren't supported" -- or that sits in a section whose
heading contains one -- together with a backticked flag token (below).
Fenced code blocks are skipped; a list item, a table row and a heading each
stand alone; a sentence ends at ". ", "! " or "? " before a capital, a
parenthesis or a code span, and at every "; " (so "`-Y` users' requests ...;
a refused request gets ..." is two sentences). Flag tokens:
  `-U`, `--resp-port`, `-o proxy_config`   the flag itself;
  `-U N`, `--port-file=<file>`, `-o hashpower=N`
                                           the flag with a placeholder value
                                           (capitals or <...>): still the flag.
A token with a concrete value (`-B binary`, `-U 0`, `-o hash_algorithm=xxh3`)
speaks of that value, not of the flag, and is never reported: that is how a
doc says a value is refused while the flag itself is listed. A bare name in
backticks (`hashpower`) is not read as a flag; write `-o hashpower`.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "src" / "server" / "config.cc"

KEYWORDS = re.compile(
    r"\b(refused|rejected|not supported|unsupported|not accepted|isn't supported|"
    r"aren't supported)\b",
    re.IGNORECASE,
)
CODE_SPAN = re.compile(r"`([^`]+)`")
SHORT_TOKEN = re.compile(r"(-[A-Za-z0-9])(?:[ =](.+))?")
LONG_TOKEN = re.compile(r"(--[a-z][a-z0-9-]*)(?:[ =](.+))?")
EXT_TOKEN = re.compile(r"-o ([a-z][a-z0-9_]*)(?:=(.*))?")
EXT_ITEM = re.compile(r"([a-z][a-z0-9_]*)(=\S*)?(\s+\(.*\))?")


def help_text():
    src = CONFIG.read_text(encoding="utf-8")
    m = re.search(r"std::string\s+HelpText\(\)\s*\{(.*?)\n\}", src, re.S)
    if m is None:
        sys.exit(f"doc_flags: no HelpText() in {CONFIG.relative_to(ROOT)}")
    text = "".join(re.findall(r'R"\((.*?)\)"', m.group(1), re.S))
    if "-h" not in text:
        sys.exit("doc_flags: HelpText() has no raw-string help text to read")
    return text


def listed_flags(text):
    """The set of flags `trove -h` lists: '-U', '--resp-port', '-o name'."""
    flags = set()
    in_ext = False
    for line in text.splitlines():
        m = re.match(r"(-[A-Za-z0-9])[,\s]", line)
        if m:
            flags.add(m.group(1))
            in_ext = m.group(1) == "-o"
        for lm in re.finditer(r"(?<![\w-])(--[a-z][a-z0-9-]*)", line):
            flags.add(lm.group(1))
        if in_ext and not m and line.startswith(" "):
            for item in line.split(","):
                im = EXT_ITEM.fullmatch(item.strip())
                if im:
                    flags.add("-o " + im.group(1))
    return flags


def is_placeholder(value):
    """`N`, `FILE[:FILE...]`, `<port>`: a metavariable, so the token is the flag."""
    return not re.search(r"[a-z0-9]", re.sub(r"<[^>]*>", "", value))


def flag_of(token):
    """The flag a backticked token names, or None (not a flag, or a value)."""
    token = token.strip()
    for pattern, prefix in ((EXT_TOKEN, "-o "), (LONG_TOKEN, ""), (SHORT_TOKEN, "")):
        m = pattern.fullmatch(token)
        if m:
            value = m.group(2)
            if value is not None and value.strip() and not is_placeholder(value):
                return None
            return prefix + m.group(1)
    return None


def blocks(lines):
    """(first line number, text, is_heading, heading level) per block."""
    out = []
    cur, start = [], 0
    fence = False

    def flush():
        nonlocal cur
        if cur:
            out.append((start, "\n".join(cur), False, 0))
        cur = []

    for n, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("```") or s.startswith("~~~"):
            flush()
            fence = not fence
            continue
        if fence:
            continue
        if not s:
            flush()
            continue
        h = re.match(r"(#{1,6})\s+(.*)", s)
        if h:
            flush()
            out.append((n, h.group(2), True, len(h.group(1))))
            continue
        if s.startswith("|") or re.match(r"([-*+]|\d+\.)\s", s):
            flush()
        if not cur:
            start = n
        cur.append(line)
        if s.startswith("|"):
            flush()
    flush()
    return out


def sentences(text):
    """(offset, sentence) pairs; never split inside a code span."""
    masked = CODE_SPAN.sub(lambda m: "`" + "x" * (len(m.group(0)) - 2) + "`", text)
    parts, last = [], 0
    for m in re.finditer(r"(?<=[.!?])\s+(?=[A-Z(`*])|;\s+", masked):
        parts.append((last, text[last:m.start()]))
        last = m.end()
    parts.append((last, text[last:]))
    return parts


def check_file(path, flags):
    problems = []
    lines = path.read_text(encoding="utf-8").splitlines()
    headings = []  # (level, refusal?) of the enclosing headings
    for first, text, is_heading, level in blocks(lines):
        if is_heading:
            while headings and headings[-1][0] >= level:
                headings.pop()
            headings.append((level, bool(KEYWORDS.search(CODE_SPAN.sub("", text)))))
        in_refusal_section = any(r for _, r in headings)
        for offset, sentence in sentences(text):
            prose = CODE_SPAN.sub("", sentence)
            if not (in_refusal_section or KEYWORDS.search(prose)):
                continue
            for span in CODE_SPAN.finditer(sentence):
                flag = flag_of(span.group(1))
                if flag is not None and flag in flags:
                    line = first + text.count("\n", 0, offset + span.start())
                    shown = " ".join(sentence.split())
                    if len(shown) > 160:
                        shown = shown[:157] + "..."
                    problems.append(
                        f"{path.relative_to(ROOT)}:{line}: `{span.group(1)}` is listed by "
                        f"`trove -h` (src/server/config.cc HelpText) but the doc calls it "
                        f"refused: {shown}")
    return problems


def main():
    flags = listed_flags(help_text())
    if not any(f.startswith("-o ") for f in flags) or "-p" not in flags:
        sys.exit("doc_flags: could not read the flag list from HelpText()")
    docs = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    problems = []
    for path in docs:
        if path.is_file():
            problems += check_file(path, flags)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
