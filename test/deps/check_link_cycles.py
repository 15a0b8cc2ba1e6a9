#!/usr/bin/env python3
"""No runtime library links one that links it back (docs/architecture.md,
dependency rules). Reads the link graph the build wrote
(test/deps/CMakeLists.txt: one line per library, "name: dep;dep;..."), and
fails naming the cycle. Only kiln's own libraries count as nodes; generator
expressions ($<LINK_ONLY:x>) are unwrapped.

    check_link_cycles.py GRAPH_FILE
    check_link_cycles.py --selftest
"""
import re
import sys


def parse(text):
    graph = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        name, deps = line.split(":", 1)
        graph[name.strip()] = [d for d in (re.sub(r"\$<LINK_ONLY:([^>]*)>", r"\1", x).strip()
                                           for x in deps.split(";")) if d]
    return {k: [d for d in v if d in graph] for k, v in graph.items()}


def find_cycle(graph):
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for dep in graph[node]:
            if state.get(dep) == "open":
                return stack[stack.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def selftest():
    ok = find_cycle(parse("a: b;c\nb: c\nc: zlib;$<LINK_ONLY:d>\nd:\n")) is None
    cyc = find_cycle(parse("a: b\nb: $<LINK_ONLY:c>\nc: a;m\n"))
    ok = ok and cyc == ["a", "b", "c", "a"]
    ok = ok and find_cycle(parse("x: x\n")) == ["x", "x"]
    print("link cycle check self-test " + ("passed" if ok else f"FAILED ({cyc})"))
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    graph = parse(open(sys.argv[1]).read())
    if len(graph) < 2:
        print(f"FAIL: {sys.argv[1]} lists {len(graph)} libraries")
        return 1
    cycle = find_cycle(graph)
    if cycle:
        print("FAIL: libraries link each other: " + " -> ".join(cycle))
        return 1
    print(f"runtime link graph has no cycle ({len(graph)} libraries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
