"""Privacy report: which profile built the site and what the privacy gate withheld, counted per layer and kind
(never a value, never a name)."""

from __future__ import annotations

from plugins.builders import BuildResult, frontmatter
from plugins.pages import BuildContext, GeneratedPage
from plugins.privacy import LAYERS, WITHHELD_EXCLUDED, WITHHELD_PRIVATE
from plugins.render import block, esc

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


def build(ctx: BuildContext) -> BuildResult:
    profile = ctx.source.profile
    withheld = ctx.source.withheld()
    kinds = sorted({k for counts in withheld.values() for k in counts}, key=lambda k: (k not in _RECORDS, k))
    head = "".join(f"<th>{esc(k)}</th>" for k in kinds)
    rows = "".join(
        f"<tr><td>{esc(name)}</td>"
        + "".join(f"<td>{withheld.get(layer, {}).get(k, 0):,}</td>" for k in kinds)
        + "</tr>"
        for layer, name in LAYERS.items()
        if withheld.get(layer)
    )
    totals = {k: sum(c.get(k, 0) for c in withheld.values()) for k in kinds}
    md = frontmatter(TITLE) + f"# {TITLE}\n\n{profile_line(profile)}\n\n"
    if rows:
        md += (
            "Counts of what did not reach this site, by layer: records withheld whole (a private marker, or an "
            "excluded category or wing) and secrets redacted, by kind. Values and names are never shown.\n\n"
            + block(
                f"<table><thead><tr><th>layer</th>{head}</tr></thead><tbody>{rows}"
                "<tr><td><strong>all layers</strong></td>"
                + "".join(f"<td><strong>{totals[k]:,}</strong></td>" for k in kinds)
                + "</tr></tbody></table>",
                cls="mw-privacy",
            )
        )
    elif profile == "public":
        md += "Nothing was withheld: no record was private and no secret was found.\n"
    page = GeneratedPage(PRIVACY, TITLE, md, meta={"lexical": False})  # linked from the home page
    return [page], []
