"""The site model: what a builder is given (`build_context`: the gated source and the build's settings) and makes
(`generated`), and the helpers pages share: concepts and their URLs, wikilinks, mentions, digests, the renderer of
untrusted memory text."""
