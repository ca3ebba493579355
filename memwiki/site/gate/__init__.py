"""The privacy gate: the detectors by class (`detect/`), the filter every record passes before anything is made from
it (`filter`, with its worker processes), and the final scan of the built site (`scan`, `offline`)."""
