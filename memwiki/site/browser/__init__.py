"""What the browser runs: the site search's embedder exported from its Python package and the files it loads
(`use_export`, `use_assets`), and the graph's offline vis-network page (`pyvis_html`)."""
