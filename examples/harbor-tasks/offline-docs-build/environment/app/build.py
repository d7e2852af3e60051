#!/usr/bin/env python3
"""Build the documentation site: content/*.md -> site/*.html, with the theme's stylesheet."""

import html
import re
import shutil
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent
THEME_URL = "https://cdn.jsdelivr.net/npm/nullius-docs-theme@1.4.2/theme.min.css"
PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="stylesheet" href="{css}">
</head>
<body>
<nav>{nav}</nav>
<main>
{body}
</main>
</body>
</html>
"""


def inline(text):
    text = html.escape(text, quote=False)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", lambda m: f'<a href="{m.group(2)}">{m.group(1)}</a>', text)


def render(markdown):
    blocks, out = re.split(r"\n\s*\n", markdown.strip()), []
    for block in blocks:
        if block.startswith("```"):
            code = "\n".join(block.splitlines()[1:-1])
            out.append(f"<pre><code>{html.escape(code, quote=False)}</code></pre>")
        elif block.startswith("#"):
            level = len(block) - len(block.lstrip("#"))
            out.append(f"<h{level}>{inline(block[level:].strip())}</h{level}>")
        elif all(line.startswith("- ") for line in block.splitlines()):
            items = "".join(f"<li>{inline(line[2:])}</li>" for line in block.splitlines())
            out.append(f"<ul>{items}</ul>")
        else:
            out.append(f"<p>{inline(' '.join(block.split()))}</p>")
    return "\n".join(out)


def fetch_theme(dest):
    with urllib.request.urlopen(THEME_URL, timeout=20) as resp:
        dest.write_bytes(resp.read())


def main():
    site = ROOT / "site"
    if site.exists():
        shutil.rmtree(site)
    (site / "assets").mkdir(parents=True)
    fetch_theme(site / "assets" / "theme.min.css")
    pages = sorted((ROOT / "content").glob("*.md"))
    titles = {p.stem: p.read_text().splitlines()[0].lstrip("# ").strip() for p in pages}
    nav = " | ".join(f'<a href="{stem}.html">{html.escape(title)}</a>' for stem, title in titles.items())
    for page in pages:
        body = render(page.read_text())
        (site / f"{page.stem}.html").write_text(PAGE.format(title=html.escape(titles[page.stem]), css="assets/theme.min.css", nav=nav, body=body))
    print(f"built {len(pages)} pages into {site}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
