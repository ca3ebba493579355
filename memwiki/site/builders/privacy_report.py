"""Privacy report: which profile built the site and what the privacy gate withheld, counted per layer and kind
(never a value, never a name)."""

from __future__ import annotations

from memwiki.site.builders import BuildResult, frontmatter
from memwiki.site.gate.filter import LAYERS, WITHHELD_EXCLUDED, WITHHELD_PRIVATE
from memwiki.site.model.build_context import BuildContext
from memwiki.site.model.generated import GeneratedPage
from memwiki.site.model.render import block, esc

PRIVACY = "privacy.md"
TITLE = "Privacy report"
_RECORDS = (WITHHELD_PRIVATE, WITHHELD_EXCLUDED)


def profile_line(profile: str) -> str:
    """One sentence on which profile built the site (the home page says it too)."""
    if profile == "public":
        return (
            "Built with the <strong>public</strong> profile: secrets are redacted and private records withheld; "
            "every file of the site was scanned for secrets after the build."
        )
    return (
        "Built with the <strong>private</strong> profile: <strong>nothing is redacted or withheld</strong>. "
        "Keep this site on the owner's machine."
    )


def withheld_table(ctx: BuildContext) -> str:
    """What the gate withheld, as a table of counts per layer and kind ("" when nothing was)."""
    withheld = ctx.source.withheld()
    kinds = sorted({k for counts in withheld.values() for k in counts}, key=lambda k: (k not in _RECORDS, k))
    if not kinds:
        return ""
    head = "".join(f"<th>{esc(k)}</th>" for k in kinds)

    def row(layer: str, name: str) -> str:
        cells = "".join(f"<td>{withheld[layer].get(k, 0):,}</td>" for k in kinds)
        return f"<tr><td>{esc(name)}</td>{cells}</tr>"

    rows = "".join(row(layer, name) for layer, name in LAYERS.items() if withheld.get(layer))
    totals = "".join(f"<td><strong>{sum(c.get(k, 0) for c in withheld.values()):,}</strong></td>" for k in kinds)
    return block(
        f"<table><thead><tr><th>layer</th>{head}</tr></thead><tbody>{rows}"
        f"<tr><td><strong>all layers</strong></td>{totals}</tr></tbody></table>",
        cls="mw-privacy",
    )


def build(ctx: BuildContext) -> BuildResult:
    profile = ctx.source.profile
    table = withheld_table(ctx)
    md = frontmatter(TITLE) + f"# {TITLE}\n\n{profile_line(profile)}\n\n"
    if table:
        md += (
            "Counts of what did not reach this site, by layer: records withheld whole (a private marker, or an "
            "excluded category or wing) and secrets redacted, by kind. Values and names are never shown.\n\n" + table
        )
    elif profile == "public":
        md += "Nothing was withheld: no record was private and no secret was found.\n"
    page = GeneratedPage(PRIVACY, TITLE, md)  # linked from the home page
    return [page], []
