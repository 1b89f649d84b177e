#!/usr/bin/env python3
"""The ACP Registry's icon rules (../shared/docs/registry.md §1.2, item 6), checked the way its
build script does: on the parsed XML, with Python's own parser (the registry's build is Python).

Reads an SVG on stdin; prints a JSON list of problems (empty: the icon passes) and exits 0, or
exits 2 when it cannot even be parsed (the problem is in the list too). With --each: a JSON list
of SVG texts on stdin, a JSON list of problem lists out.

Rules: no `<!--` comment anywhere in the text (they break the registry's MDX embedding); the
root element is <svg>; its size is exactly 16x16 and square (width/height when given, the
viewBox when given, and at least one of them); every fill and stroke (attributes, inline
`style`, and `<style>` CSS) is `currentColor`, `none` or `inherit`, and `currentColor` appears at
least once (so the icon follows the editor's theme).
"""
import json
import re
import sys
import xml.etree.ElementTree as ET

ALLOWED = {"currentcolor", "none", "inherit"}
# `fill: x` / `stroke: x` declarations in a style attribute or a <style> sheet.
DECL = re.compile(r"(?<![-\w])(fill|stroke)\s*:\s*([^;}\s!]+)", re.IGNORECASE)


def local(tag):
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def length(value):
    """16, "16", "16px" → 16.0; anything else (%, em, junk) → None."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(px)?\s*", value or "")
    return float(m.group(1)) if m else None


def check(text):
    problems = []
    if "<!--" in text:
        problems.append("icon.svg contains an XML comment (<!--)")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as error:
        return problems + [f"icon.svg is not well-formed XML: {error}"], False
    if local(root.tag) != "svg":
        problems.append(f"root element is <{local(root.tag)}>, not <svg>")

    width, height, view_box = root.get("width"), root.get("height"), root.get("viewBox")
    if width is None and height is None and view_box is None:
        problems.append("icon.svg has neither width/height nor a viewBox: its size is unknown")
    if width is not None or height is not None:
        w, h = length(width), length(height)
        if w != 16 or h != 16:
            problems.append(f"width/height are {width!r}x{height!r}, not 16x16")
    if view_box is not None:
        parts = re.split(r"[\s,]+", view_box.strip())
        try:
            vw, vh = float(parts[2]), float(parts[3])
        except (IndexError, ValueError):
            vw = vh = None
        if len(parts) != 4 or vw != 16 or vh != 16:
            problems.append(f"viewBox {view_box!r} is not 16x16")

    colours = []  # (where, value)
    for element in root.iter():
        name = local(element.tag)
        for attribute in ("fill", "stroke"):
            if element.get(attribute) is not None:
                colours.append((f"<{name}> {attribute}=", element.get(attribute)))
        for prop, value in DECL.findall(element.get("style") or ""):
            colours.append((f"<{name}> style {prop}:", value))
        if name == "style":
            for prop, value in DECL.findall(element.text or ""):
                colours.append((f"<style> {prop}:", value))
    for where, value in colours:
        if value.strip().lower() not in ALLOWED:
            problems.append(f"{where}{value!r}: only currentColor, none or inherit are allowed")
    if not any(value.strip().lower() == "currentcolor" for _, value in colours):
        problems.append("currentColor is used nowhere (the icon would not follow the theme)")
    return problems, True


if __name__ == "__main__":
    if sys.argv[1:] == ["--each"]:
        # A JSON list of SVG texts in, a list of problem lists out: one Python start for many
        # icons (the tests' broken icons).
        print(json.dumps([check(text)[0] for text in json.load(sys.stdin)]))
        sys.exit(0)
    found, parsed = check(sys.stdin.read())
    print(json.dumps(found))
    sys.exit(0 if parsed else 2)
