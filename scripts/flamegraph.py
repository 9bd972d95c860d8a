#!/usr/bin/env python3
"""Flame graphs without outside tools: folds `perf script` output and draws it as an SVG.

    perf script -i perf.data | scripts/flamegraph.py --fold [--threads] > stacks.folded
    scripts/flamegraph.py --title T --subtitle S -o graph.svg stacks.folded
    scripts/flamegraph.py --top 15 stacks.folded          # markdown tables: self and inclusive time

Folded stacks are Brendan Gregg's format, one line per distinct stack, root first:
"frame;frame;frame count". --fold tags each frame with its kind as a suffix, e.g. "Logger.log(_:_:_:)_[g]"
(flamegraph.pl's "_[k]" for the kernel, letters of its own for the rest); frames without a tag are classified
by their names. Swift symbols are demangled with `swift demangle --simplified --compact`, run once.
Benchmarks/profile.sh (`make profile`) uses all three modes. Python 3 standard library only.
"""

import argparse
import colorsys
import html
import io
import os
import re
import shutil
import subprocess
import sys
import zlib
from collections import Counter

# kind tag -> (short name, legend, hue range in degrees, saturation, lightness range).
KINDS = {
    "g": ("gateway", "gateway (Swift)", (8, 40), 0.85, (0.55, 0.66)),
    "s": ("Swift runtime", "Swift runtime, stdlib, Foundation", (262, 292), 0.50, (0.66, 0.76)),
    "c": ("libc", "libc", (198, 218), 0.60, (0.62, 0.72)),
    "u": ("libcurl", "libcurl", (95, 130), 0.50, (0.55, 0.66)),
    "q": ("SQLite", "SQLite, libpq, hiredis", (168, 184), 0.55, (0.48, 0.58)),
    "k": ("kernel", "kernel", (48, 58), 0.45, (0.60, 0.70)),
    "o": ("other", "other", (0, 0), 0.0, (0.72, 0.82)),
    "t": ("thread", "thread", (210, 210), 0.15, (0.80, 0.86)),
}
TAG = re.compile(r"_\[([a-z])\]$")

# Swift modules that ship with the toolchain: code in them counts as the runtime's, not the gateway's.
TOOLCHAIN_MODULES = {
    "Swift", "_Concurrency", "Synchronization", "Foundation", "FoundationEssentials", "CoreFoundation",
    "FoundationInternationalization", "FoundationNetworking", "_FoundationCShims", "_FoundationCollections",
    "Dispatch", "Glibc", "SwiftGlibc", "Musl", "_StringProcessing", "RegexBuilder", "Observation",
    "Distributed", "_Volatile", "_Differentiation", "XCTest", "Testing", "__C",
}
CURL_LIBRARIES = ("libcurl", "libnghttp2", "libz.", "libbrotli", "libidn2", "libpsl", "libssh", "librtmp",
                  "libzstd", "libgssapi", "libkrb5", "libldap", "liblber", "libsasl2", "libunistring")
C_LIBRARIES = ("libc.", "libc-", "libm.", "libpthread", "libdl.", "librt.", "ld-linux", "libgcc_s", "libstdc++",
               "[vdso]", "[vsyscall]")
USER_PSEUDO_DSOS = ("[vdso]", "[vsyscall]", "[unknown]", "[heap]", "[stack]", "[anon]")
STORE_LIBRARIES = ("libsqlite3", "libpq.", "libhiredis")
SWIFT_LIBRARIES = ("libswift", "libFoundation", "lib_Foundation", "libdispatch", "libBlocksRuntime", "libicu",
                   "lib_InternalSwift", "libXCTest")
# C and C++ symbols of a statically linked Swift runtime (it and Dispatch live in the executable then).
RUNTIME_C = re.compile(r"^(_*swift|swift::|_*dispatch|_os_|tuple_|_Block|__cxa|operator |std::|icu_|u_|ucol_)"
                       r"|^(completeTask|destroyTask|withStatusRecordLock|getCache|objectdestroy)")
# C shims of the gateway's own C targets follow "CModule_function" (Sources/CEventLoop).
APP_C = re.compile(r"^C[A-Z][A-Za-z]+_")
# glibc's CPU-specific string functions, which perf at times names as inlined into the caller.
GLIBC_VARIANT = re.compile(r"^__\w+_(avx|evex|sse|erms)")


def swift_module(name):
    """The module a mangled Swift symbol belongs to ("Swift" for the standard library), or None."""
    name = name.lstrip("_")
    if not name.startswith(("$s", "$S", "$e")):
        return None
    rest = name[2:]
    if rest.startswith("s"):
        return "Swift"
    if rest[:1] == "S" and rest[1:2].isalpha():  # a standard substitution: Sa (Array), SS (String), Sc…
        return "__C" if rest[1] in "oC" else "Swift"
    digits = re.match(r"\d+", rest)
    if not digits:  # a thunk or the like that the compiler makes, of no module
        return ""
    length = int(digits.group())
    return rest[digits.end():digits.end() + length]


def classify(symbol, dso, address):
    """The kind tag of one frame, from the library it runs in and, for an executable's frames, its name."""
    base = os.path.basename(dso)
    if address >= 0xFFFF800000000000 or (dso.startswith("[") and dso not in USER_PSEUDO_DSOS):
        return "k"  # the kernel or one of its modules ("[nf_conntrack]")
    for prefixes, kind in ((C_LIBRARIES, "c"), (CURL_LIBRARIES, "u"), (STORE_LIBRARIES, "q"),
                           (SWIFT_LIBRARIES, "s")):
        if base.startswith(prefixes):
            return kind
    if base.startswith("lib") and ".so" in base:
        return "o"
    return classify_name(symbol)


def classify_name(symbol):
    """The kind of a frame of the executable (or of an untagged folded frame), by its name alone."""
    module = swift_module(symbol)
    if module is not None:
        return "s" if module in TOOLCHAIN_MODULES or module[:1] in ("", "_") else "g"
    if symbol.startswith("[") or not symbol:
        return "o"
    if APP_C.match(symbol):
        return "g"
    if RUNTIME_C.match(symbol) or "::" in symbol:
        return "s"
    if GLIBC_VARIANT.match(symbol):
        return "c"
    return "o"


def demangle(names):
    """Readable forms of the Swift symbols among names, from one run of the toolchain's demangler."""
    mangled = sorted({n for n in names if swift_module(n) is not None})
    tool = shutil.which("swift")
    if not mangled or not tool:
        return {}
    try:
        out = subprocess.run([tool, "demangle", "--simplified", "--compact"], input="\n".join(mangled) + "\n",
                             capture_output=True, text=True, check=True, timeout=120).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {}
    return dict(zip(mangled, out)) if len(out) == len(mangled) else {}


def shorten(name, limit):
    """name within limit characters: innermost (…) and <…> groups collapse to "(..)" first, then the end goes."""
    def expand(text):
        return text.replace("\x02", "(..)").replace("\x03", "<..>").replace("\x01", "->")

    if len(name) <= limit:
        return name
    # "->" is no bracket; collapsed groups become single placeholder characters so that outer groups match next.
    text = name.replace("->", "\x01")
    while len(expand(text)) > limit:
        shorter = re.sub(r"<[^()<>]*>", "\x03", re.sub(r"\([^()<>]*\)", "\x02", text))
        if shorter == text:
            break
        text = shorter
    text = expand(text)
    return text if len(text) <= limit else text[:limit - 2] + ".."


FRAME = re.compile(r"^\s+([0-9a-fA-F]+)\s+(.*?)(?:\+0x[0-9a-fA-F]+)?\s+\((.*)\)\s*$")
HEADER = re.compile(r"^(.+?)\s+(?:\d+/)?\d+\s+(?:\[\d+\]\s+)?\d+\.\d+:")


def fold(lines, threads, limit, readable=True):
    """Folded stacks (Counter of root-first frame tuples) from `perf script` output: a header line per sample,
    then its frames innermost first, "address symbol+offset (dso)", then a blank line."""
    samples = []
    thread, frames = None, []

    def finish():
        if thread is not None:
            samples.append((thread, frames or [["[no stack]", "o", 0]]))

    for line in lines:
        if not line.strip():
            finish()
            thread, frames = None, []
        elif line[0] not in " \t":
            finish()
            header = HEADER.match(line)
            thread, frames = (header.group(1) if header else line.split()[0]), []
        else:
            match = FRAME.match(line)
            if not match or thread is None:
                continue
            address, symbol, dso = int(match.group(1), 16), match.group(2), match.group(3)
            if symbol == "[unknown]":
                symbol = "[%s]" % os.path.basename(dso) if dso not in ("[unknown]", "") else "[unknown]"
            # perf lists a frame's inlined callees first, under "(inlined)", at the same address: they run in
            # the library of the frame that follows, which is only known once it is read.
            frames.append([symbol, None if dso == "inlined" else classify(symbol, dso, address), address])
    finish()
    names = demangle({f[0] for _, fs in samples for f in fs}) if readable else {}
    stacks = Counter()
    for thread, frames in samples:
        kind_below, address_below = "o", None
        for frame in reversed(frames):  # root first: an inlined frame takes the library of the one it is in
            if frame[1] is None and frame[2] == address_below:
                frame[1] = classify_name(frame[0]) if swift_module(frame[0]) is not None else kind_below
            elif frame[1] is None:
                # No frame at its address holds it: a real frame that perf names by its debug information's
                # name ("__GI___libc_free" for free) and calls inlined. Only glibc ships that separately here
                # (libc6-dbg), so a name that says nothing else is glibc's.
                frame[1] = classify_name(frame[0])
                frame[1] = "c" if frame[1] == "o" else frame[1]
            kind_below, address_below = frame[1], frame[2]
        stack = tuple("%s_[%s]" % (shorten(names.get(f[0], f[0]), limit).replace(";", ","), f[1])
                      for f in reversed(frames))
        if threads:
            stack = ("%s_[t]" % thread.replace(";", ","),) + stack
        stacks[stack] += 1
    return stacks


def read_folded(lines):
    """Counter of root-first frame tuples from folded lines; malformed lines are skipped."""
    stacks = Counter()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if stack and count.isdigit():
            stacks[tuple(stack.split(";"))] += int(count)
    return stacks


def merge_threads(stacks):
    """stacks without their thread frames (--fold --threads), so that the same code on two threads is one."""
    merged = Counter()
    for stack, count in stacks.items():
        merged[tuple(f for f in stack if not f.endswith("_[t]"))] += count
    return merged


def split_tag(frame):
    """(name, kind) of a folded frame: its tag when it has one, else what its name says."""
    match = TAG.search(frame)
    if match and match.group(1) in KINDS:
        return frame[:match.start()], match.group(1)
    return frame, classify_name(frame)


def colour(name, kind):
    """A fill for a frame: its kind's hue, varied by a hash of its name so a function keeps its colour."""
    _, _, (low, high), saturation, (dark, light) = KINDS[kind]
    v = zlib.crc32(name.encode()) / 0xFFFFFFFF
    w = zlib.crc32(name[::-1].encode()) / 0xFFFFFFFF
    r, g, b = colorsys.hls_to_rgb((low + (high - low) * v) / 360, dark + (light - dark) * w, saturation)
    return "#%02x%02x%02x" % (round(r * 255), round(g * 255), round(b * 255))


class Node:
    __slots__ = ("name", "kind", "count", "children")

    def __init__(self, name, kind):
        self.name, self.kind, self.count, self.children = name, kind, 0, {}


def tree(stacks):
    root = Node("all", "o")
    for stack, count in stacks.items():
        root.count += count
        node = root
        for frame in stack:
            child = node.children.get(frame)
            if child is None:
                child = node.children[frame] = Node(*split_tag(frame))
            child.count += count
            node = child
    return root


CHAR_WIDTH = 6.6  # px per character of the 11 px monospace labels; the script below fits text the same way


def fit(name, width):
    chars = int((width - 6) // CHAR_WIDTH)
    if chars < 3:
        return ""
    return name if len(name) <= chars else name[:chars - 2] + ".."


SCRIPT = """
var W = %(width)d, PAD = %(pad)d, CW = %(cw)s, frames = [], details, unzoomButton;
function fit(name, w) { var n = Math.floor((w - 6) / CW); return n < 3 ? "" : name.length <= n ? name
  : name.slice(0, n - 2) + ".."; }
function place(g, x, w) { var r = g.firstElementChild.nextElementSibling, t = r.nextElementSibling;
  r.setAttribute("x", x.toFixed(2)); r.setAttribute("width", w.toFixed(2));
  t.setAttribute("x", (x + 3).toFixed(2)); t.textContent = fit(g.name, w); }
function zoom(f) {
  var scale = (W - 2 * PAD) / f.w, e = 0.01;
  frames.forEach(function (g) {
    if (g.y > f.y && g.x <= f.x + e && g.x + g.w >= f.x + f.w - e) {  // below: a caller of the frame
      g.style.display = ""; g.style.opacity = 0.6; place(g, PAD, W - 2 * PAD);
    } else if (g.y <= f.y && g.x >= f.x - e && g.x + g.w <= f.x + f.w + e) {
      g.style.display = ""; g.style.opacity = 1; place(g, PAD + (g.x - f.x) * scale, g.w * scale);
    } else { g.style.display = "none"; }
  });
  unzoomButton.style.display = "";
}
function unzoom() { frames.forEach(function (g) { g.style.display = ""; g.style.opacity = 1; place(g, g.x, g.w); });
  unzoomButton.style.display = "none"; }
function init() {
  details = document.getElementById("details"); unzoomButton = document.getElementById("unzoom");
  frames = [].slice.call(document.querySelectorAll("g.f"));
  frames.forEach(function (g) { var r = g.firstElementChild.nextElementSibling;
    g.x = +r.getAttribute("x"); g.w = +r.getAttribute("width"); g.y = +r.getAttribute("y");
    g.info = g.firstElementChild.textContent; g.name = g.info.split("\\n")[0]; });
  var all = document.getElementById("frames");
  all.addEventListener("click", function (e) { var g = e.target.closest("g.f"); if (g) zoom(g); });
  all.addEventListener("mouseover", function (e) { var g = e.target.closest("g.f");
    if (g) details.textContent = g.info.replace("\\n", "  —  "); });
  all.addEventListener("mouseout", function () { details.textContent = " "; });
  unzoomButton.addEventListener("click", unzoom);
}
window.addEventListener("load", init);
"""


def svg(stacks, title, subtitle, width=1200, frame_height=16, min_width=0.1):
    """The SVG document for stacks: root at the bottom, a frame's width its share of the samples."""
    root = tree(stacks)
    pad, top, legend_height, bottom = 10, 48, 20, 28
    scale = (width - 2 * pad) / max(root.count, 1)
    rows = []  # (depth, x, node), depth-first, children by name as flamegraph.pl orders them

    def walk(node, depth, x):
        rows.append((depth, x, node))
        for name in sorted(node.children):
            child = node.children[name]
            if child.count * scale >= min_width:
                walk(child, depth + 1, x)
            x += child.count * scale

    walk(root, 0, pad)
    depth = max(d for d, _, _ in rows) + 1
    legend, x, y = [], pad, top  # one swatch per kind present, in rows as wide as the graph
    for kind in sorted({n.kind for _, _, n in rows if n is not root}, key=list(KINDS).index):
        label = KINDS[kind][1]
        if x > pad and x + 16 + len(label) * CHAR_WIDTH > width - pad:
            x, y = pad, y + 16
        legend.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>'
                      % (x, y, colour(label, kind), x + 16, y + 10, html.escape(label)))
        x += 16 + len(label) * CHAR_WIDTH + 18
    legend_height += y - top
    height = top + legend_height + depth * frame_height + bottom
    out = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        '<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">'
        % (width, height, width, height),
        "<style>text { font-family: monospace; font-size: 11px; fill: #000 } .f { cursor: pointer }"
        " .f:hover rect { stroke: #000; stroke-width: 0.6 } #title { font-size: 16px; font-weight: bold }"
        " #unzoom { cursor: pointer; fill: #06c } .f text { pointer-events: none }</style>",
        "<script><![CDATA[%s]]></script>" % (SCRIPT % {"width": width, "pad": pad, "cw": CHAR_WIDTH}),
        '<rect x="0" y="0" width="%d" height="%d" fill="#f8f8f4"/>' % (width, height),
        '<text id="title" x="%d" y="20" text-anchor="middle">%s</text>' % (width // 2, html.escape(title)),
        '<text x="%d" y="38" text-anchor="middle">%s</text>' % (width // 2, html.escape(subtitle)),
        '<text id="unzoom" x="%d" y="20" style="display:none">Reset zoom</text>' % pad,
    ]
    out += legend
    out.append('<text id="details" x="%d" y="%d"> </text>' % (pad, height - 10))
    out.append('<g id="frames">')
    total = max(root.count, 1)
    for d, x, node in rows:
        w = node.count * scale
        y = top + legend_height + (depth - 1 - d) * frame_height
        name = "all (%s samples)" % format(root.count, ",") if node is root else node.name
        fill = "#d8d8d0" if node is root else colour(node.name, node.kind)
        info = "%s\n%s samples, %.2f %%" % (name, format(node.count, ","), 100 * node.count / total)
        out.append('<g class="f"><title>%s</title><rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" rx="2"/>'
                   '<text x="%.2f" y="%d">%s</text></g>'
                   % (html.escape(info), x, y, w, frame_height - 1, fill, x + 3, y + 11, html.escape(fit(name, w))))
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def top_tables(stacks, count):
    """Markdown: the functions with the most self time and the most inclusive time, and self time by kind."""
    total = sum(stacks.values()) or 1
    self_time, inclusive, by_kind, by_thread = Counter(), Counter(), Counter(), Counter()
    for stack, n in stacks.items():
        frames = [split_tag(f) for f in stack]
        if frames and frames[0][1] == "t":
            by_thread[frames[0][0]] += n
        frames = [f for f in frames if f[1] != "t"]
        if not frames:
            continue
        self_time[frames[-1]] += n
        by_kind[frames[-1][1]] += n
        for frame in set(frames):  # once per stack, however often it recurses
            inclusive[frame] += n

    def cell(name):
        return "`%s`" % name.replace("|", "\\|").replace("`", "'")

    lines = []
    for heading, counter in (("self", self_time), ("inclusive", inclusive)):
        lines += ["| %s %% | samples | function | kind |" % heading, "|---:|---:|---|---|"]
        for (name, kind), n in counter.most_common(count):
            lines.append("| %.1f %% | %s | %s | %s |" % (100 * n / total, format(n, ","), cell(name), KINDS[kind][0]))
        lines.append("")
    shares = ("%s %.1f %%" % (KINDS[kind][0], 100 * n / total) for kind, n in by_kind.most_common())
    lines.append("self time by kind: " + ", ".join(shares))
    if by_thread:
        threads = ("%s %s" % (thread, format(n, ",")) for thread, n in by_thread.most_common())
        lines.append("samples by thread: " + ", ".join(threads))
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", nargs="?", help="perf script output (--fold) or folded stacks; default stdin")
    parser.add_argument("-o", "--output", help="where to write; default stdout")
    parser.add_argument("--fold", action="store_true", help="convert `perf script` output to folded stacks")
    parser.add_argument("--threads", action="store_true", help="with --fold: a root frame per thread name")
    parser.add_argument("--no-demangle", action="store_true", help="with --fold: keep Swift symbols mangled")
    parser.add_argument("--name-limit", type=int, default=100, help="with --fold: longest frame name (100)")
    parser.add_argument("--merge-threads", action="store_true", help="draw without the thread frames of --threads")
    parser.add_argument("--top", type=int, metavar="N", help="print the top N functions as markdown tables")
    parser.add_argument("--title", default="Flame graph")
    parser.add_argument("--subtitle", default="")
    parser.add_argument("--width", type=int, default=1200)
    parser.add_argument("--min-width", type=float, default=0.1, help="leave out frames narrower (px)")
    args = parser.parse_args()
    # perf prints whatever bytes a symbol table holds: undecodable ones must not end the run.
    source = open(args.input, errors="replace") if args.input else io.TextIOWrapper(sys.stdin.buffer, errors="replace")
    with source:
        if args.fold:
            stacks = fold(source, args.threads, args.name_limit, not args.no_demangle)
            text = "".join("%s %d\n" % (";".join(s), n) for s, n in sorted(stacks.items()))
        else:
            stacks = read_folded(source)
            if not stacks:
                sys.exit("flamegraph.py: no stacks in the input")
            if args.top:
                text = top_tables(stacks, args.top)
            else:
                stacks = merge_threads(stacks) if args.merge_threads else stacks
                text = svg(stacks, args.title, args.subtitle, args.width, min_width=args.min_width)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
