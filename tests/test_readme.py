"""The README stays a user guide, and the documentation's links lead somewhere.

README.md is what a newcomer reads first: at most 250 lines (the lab notebook lives in docs/).
Every relative link and image in README.md and docs/*.md must name a file of the repository, and
a link into a Markdown file's section must name a heading that file has. Links inside code (fenced
blocks, `inline code`) are text, not links; links to other hosts are not followed."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 250

FENCED_BLOCK = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def prose(markdown: str) -> str:
    """The Markdown without its code: fenced blocks and inline code spans removed."""
    return INLINE_CODE.sub("", FENCED_BLOCK.sub("", markdown))


def relative_links(markdown: str) -> list[str]:
    """Targets of the links and images that point into the repository (no scheme, no bare #)."""
    targets = (match.group(1) for match in LINK.finditer(prose(markdown)))
    return [t for t in targets if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", t) and not t.startswith("#")]


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    return {anchor(heading) for heading in HEADING.findall(FENCED_BLOCK.sub("", markdown))}


def test_the_readme_is_a_user_guide_of_at_most_250_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines (at most {MAX_README_LINES})"


def test_the_link_finder_reads_links_and_images_and_skips_code():
    text = ("See [the lake](docs/lake.md#layout) and ![shot](docs/images/overview.png \"Overview\"), "
            "[a site](https://kafka.apache.org/), [here](#two-commands), `[code](not/a/link.md)`.\n"
            "```\n[fenced](not/a/link/either.md)\n```\n")
    assert relative_links(text) == ["docs/lake.md#layout", "docs/images/overview.png"]
    assert anchor("The `kpulse` command") == "the-kpulse-command"
    assert anchor("What is refused, and why") == "what-is-refused-and-why"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_and_image_points_to_a_file_that_exists(document):
    broken = []
    for target in relative_links(document.read_text(encoding="utf-8")):
        path_part, _, fragment = target.partition("#")
        path = (document.parent / unquote(path_part)).resolve()
        if not path.exists() or ROOT not in path.parents:
            broken.append(f"{target}: no such file")
        elif fragment and path.suffix == ".md" and fragment not in anchors(path.read_text(encoding="utf-8")):
            broken.append(f"{target}: {path.name} has no heading #{fragment}")
    assert not broken, f"{document.relative_to(ROOT)}: " + "; ".join(broken)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_link_to_a_section_of_the_same_page_names_one_of_its_headings(document):
    markdown = document.read_text(encoding="utf-8")
    targets = (match.group(1) for match in LINK.finditer(prose(markdown)))
    missing = [t for t in targets if t.startswith("#") and t[1:] not in anchors(markdown)]
    assert not missing, f"{document.relative_to(ROOT)}: no heading for {missing}"
