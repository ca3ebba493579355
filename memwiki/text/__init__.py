"""Text made searchable, for every layer and for recall: the embedders and their worker pool, vectors kept once per
text (`vectors`), CJK-aware words and the lexical index on them, the RE2 screen in front of costly patterns, and how
people mark text private (`markers`)."""
