"""The privacy gate's detectors, one module per class of secret (see `detectors.Detectors`):

- `context`: credentials by the words and flags around them;
- `shapes`: secret-shaped tokens and key blocks, with no context;
- `personal`: personal data (phones, checked numbers, e-mail, ids, seed phrases);
- `hosts`: private addresses and internal host names;
- `providers`: vendors' key formats (ours and betterleaks').
"""

from memwiki.site.gate.detect.detectors import CONTACT_KINDS, Detectors
from memwiki.site.gate.detect.spans import REDACTED_PREFIX, WITHHELD_NAME, Span

__all__ = ["CONTACT_KINDS", "Detectors", "REDACTED_PREFIX", "Span", "WITHHELD_NAME"]
