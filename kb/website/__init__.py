"""The static site: `build_site` renders a knowledge base into plain files; `serve` previews them on loopback."""
