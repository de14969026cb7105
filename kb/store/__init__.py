"""The knowledge-base folder: finding it, its settings, the entry files and what else kb writes there."""
