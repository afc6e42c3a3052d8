#!/usr/bin/env python3
"""check-notes.py SOURCE_ROOT -- every reference to a numbered note resolves.

A note is a comment paragraph opening with "(N) Title" (N a number) in the file that
enforces it (STYLE: notes state an invariant and where it is enforced).  References
are "file.c note N" / "file.c NOTE N" anywhere in the sources, docs and protos (the
file name may end a line and the word NOTE start the next), and a bare "note N" /
"Note N" / "NOTE N" inside a .c or .h file, which names a note of that same file.  "note 3a"
resolves to note (3).  The number may be written in parentheses, "file.c note (N)",
"note (N)": it is checked the same, though the project writes "note N".  Exit 1 and
one line per reference that points at nothing.
"""
import os
import re
import subprocess
import sys

top = sys.argv[1] if len(sys.argv) > 1 else '.'
try:
    files = subprocess.run(['git', '-C', top, 'ls-files'], capture_output=True, text=True,
                           check=True).stdout.split()
except (OSError, subprocess.CalledProcessError):      # not a git checkout: walk it
    files = [os.path.relpath(os.path.join(d, n), top) for d, dirs, names in os.walk(top)
             for n in names if not d.startswith(os.path.join(top, 'build'))]
texts = {}


def text(f):
    if f not in texts:
        with open(os.path.join(top, f), encoding='utf-8', errors='replace') as fh:
            texts[f] = fh.read()
    return texts[f]


def defines(f, num):
    for n in (num, re.match(r'\d+', num).group(0)):
        if re.search(r'^\s*(?:/\*|\*|//)\s*\(' + n + r'\)\s+[^\s).,]', text(f), re.M):
            return True
    return False


by_name = {}
for f in files:
    if re.search(r'\.(c|h|proto)$', f):
        by_name.setdefault(os.path.basename(f), []).append(f)

cross = re.compile(r'([A-Za-z0-9_-]+\.(?:c|h|proto))\s*(?:\n\s*(?:\*|//)?)?\s+(?:note|NOTE|notes|NOTES)\s+'
                   r'(?:(\d+[a-z]?)|\((\d+[a-z]?)\))')
own = re.compile(r'(?<![A-Za-z0-9_.-])(?:note|Note|NOTE) (?:(\d+[a-z]?)\b|\((\d+[a-z]?)\))')
bad = n_cross = n_own = 0
for f in files:
    if not re.search(r'\.(c|h|proto|md)$', f):
        continue
    t = text(f)
    for m in cross.finditer(t):
        n_cross += 1
        name, num = m.group(1), m.group(2) or m.group(3)
        if not any(defines(p, num) for p in by_name.get(name, [])):
            line = t.count('\n', 0, m.start()) + 1
            print(f"{f}:{line}: {name} has no note ({num})")
            bad += 1
    if not re.search(r'\.(c|h)$', f):
        continue
    for m in own.finditer(t):
        before = t[max(0, m.start() - 60):m.start()]
        if re.search(r'\.(c|h|proto|md)\s*(?:\n\s*(?:\*|//)?)?\s*,?\s*$', before) or \
           re.search(r'(DESIGN|docs/\S+|issue|section|rule)\s*$', before):
            continue
        n_own += 1
        if not defines(f, m.group(1) or m.group(2)):
            line = t.count('\n', 0, m.start()) + 1
            print(f"{f}:{line}: '{m.group(0)}' names no note of this file: write the file's name")
            bad += 1
print(f"check-notes: {n_cross} references to other files, {n_own} within files, {bad} unresolved")
sys.exit(1 if bad else 0)
