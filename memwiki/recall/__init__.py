"""Recall: the cascade over the layers in priority order with its fusion of meaning and words (`cascade`), the files
layer (wiki pages and entity pages, kept between processes: `files_layer`, `entity_pages`), and recall over read-only
sources (`sources`)."""
